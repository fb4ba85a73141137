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

/// Charts with more bars than this (one per rank of a large run: thousands of SVG elements)
/// are drawn in an animation frame of their own ([`crate::deferred`]).
pub const DEFER_BARS: usize = 64;

/// Vertical bars scaled to the largest value or reference; a reference is a dark tick across
/// its bar.
#[component]
pub fn BarChart(bars: Vec<Bar>, #[prop(into)] test_id: String) -> impl IntoView {
    if bars.len() <= DEFER_BARS {
        return bar_chart(&bars, test_id).into_any();
    }
    let bars = std::sync::Arc::new(bars);
    ncclscope_app::page_logic::deferred::deferred(
        move || bar_chart(&bars, test_id.clone()),
        || view! { <svg class="chart" data-pending="" viewBox=format!("0 0 {W} {H}") role="img"></svg> },
    )
    .into_any()
}

fn bar_chart(bars: &[Bar], test_id: String) -> impl IntoView {
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
        .iter()
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
                <g data-label=b.label.clone() data-value=b.value>
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

/// One scatter point: position (bytes, GB/s) and how many kernels it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub weight: u64,
}

/// A horizontal reference line at `y` (a link class's bus bandwidth).
#[derive(Clone, Debug, PartialEq)]
pub struct HLine {
    pub label: String,
    pub y: f64,
}

const SW: f64 = 640.0;
const SH: f64 = 260.0;
const S_LEFT: f64 = 46.0;
const S_BOTTOM: f64 = 24.0;

/// Decades spanning `lo..=hi` (both > 0): the axis range, whole powers of ten.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let a = lo.log10().floor();
    let b = hi.log10().ceil();
    (a, if b > a { b } else { a + 1.0 })
}

fn decade_label(e: f64, unit: &str) -> String {
    format!("1e{e}{unit}")
}

/// Log-log scatter; a point's radius grows with the kernels it stands for. Every point carries
/// its values as data attributes (tests and the SVG export read them).
#[component]
pub fn Scatter(
    points: Vec<Point>,
    lines: Vec<HLine>,
    #[prop(into)] x_unit: String,
    #[prop(into)] y_unit: String,
    #[prop(into)] test_id: String,
) -> impl IntoView {
    let xs = points.iter().map(|p| p.x).filter(|v| *v > 0.0);
    let (xlo, xhi) = xs.fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let ys = points
        .iter()
        .map(|p| p.y)
        .chain(lines.iter().map(|l| l.y))
        .filter(|v| *v > 0.0);
    let (ylo, yhi) = ys.fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (xa, xb) = if xhi > 0.0 {
        decades(xlo, xhi)
    } else {
        (0.0, 1.0)
    };
    let (ya, yb) = if yhi > 0.0 {
        decades(ylo, yhi)
    } else {
        (0.0, 1.0)
    };
    let px = move |v: f64| S_LEFT + (SW - S_LEFT - 4.0) * (v.log10() - xa) / (xb - xa);
    let py = move |v: f64| (SH - S_BOTTOM) * (1.0 - (v.log10() - ya) / (yb - ya));
    let top_weight = points.iter().map(|p| p.weight).max().unwrap_or(1).max(1) as f64;
    let x_ticks = (xa as i64..=xb as i64)
        .map(|e| {
            let x = px(10f64.powi(e as i32));
            view! {
                <g>
                    <line x1=x x2=x y1=0.0 y2=SH - S_BOTTOM class="chart-grid" />
                    <text x=x y=SH - 6.0 text-anchor="middle" class="chart-label">
                        {decade_label(e as f64, &x_unit)}
                    </text>
                </g>
            }
        })
        .collect_view();
    let y_ticks = (ya as i64..=yb as i64)
        .map(|e| {
            let y = py(10f64.powi(e as i32));
            view! {
                <g>
                    <line x1=S_LEFT x2=SW y1=y y2=y class="chart-grid" />
                    <text x=S_LEFT - 4.0 y=y + 4.0 text-anchor="end" class="chart-label">
                        {decade_label(e as f64, &y_unit)}
                    </text>
                </g>
            }
        })
        .collect_view();
    let limit_lines = lines
        .into_iter()
        .map(|l| {
            let y = py(l.y);
            view! {
                <g data-testid="limit-line" data-gbps=l.y data-class=l.label.clone()>
                    <title>{format!("{} limit: {:.1} GB/s", l.label, l.y)}</title>
                    <line x1=S_LEFT x2=SW y1=y y2=y class="chart-reference" />
                    <text x=SW - 4.0 y=y - 3.0 text-anchor="end" class="chart-label">
                        {format!("{} {:.0} GB/s", l.label, l.y)}
                    </text>
                </g>
            }
        })
        .collect_view();
    let dots = points
        .into_iter()
        .filter(|p| p.x > 0.0 && p.y > 0.0)
        .map(|p| {
            let r = 2.0 + 4.0 * (p.weight as f64 / top_weight).sqrt();
            view! {
                <circle cx=px(p.x) cy=py(p.y) r=r class="chart-point" data-testid="scatter-point"
                    data-x=p.x data-y=p.y data-weight=p.weight>
                    <title>{format!("{:.0} B, {:.2} GB/s: {} kernels", p.x, p.y, p.weight)}</title>
                </circle>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" data-testid=test_id viewBox=format!("0 0 {SW} {SH}") role="img">
            {x_ticks}
            {y_ticks}
            {limit_lines}
            {dots}
        </svg>
    }
}

/// One box of a topology diagram.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoBox {
    pub kind: String,
    pub label: String,
}

/// Boxes in one row per kind (GPUs, then switches, CPUs, NICs, ...), links as straight lines
/// with their class and bandwidth at the middle.
#[component]
pub fn TopologyDiagram(
    boxes: Vec<TopoBox>,
    /// (from, to, class, GB/s), indices into `boxes`.
    links: Vec<(usize, usize, String, f64)>,
    #[prop(into)] test_id: String,
) -> impl IntoView {
    const BOX_W: f64 = 180.0;
    const BOX_H: f64 = 30.0;
    const ROW_H: f64 = 90.0;
    const GAP: f64 = 20.0;
    let rank = |k: &str| match k {
        "GPU" => 0,
        "NVS" => 1,
        "PCI" => 2,
        "CPU" => 3,
        "NIC" => 4,
        "NET" => 5,
        _ => 6,
    };
    let mut rows: Vec<i32> = boxes.iter().map(|b| rank(&b.kind)).collect();
    rows.sort_unstable();
    rows.dedup();
    // Links inside a row (NVLink between GPUs) are arcs above it, higher the farther apart
    // their ends are, so they do not overlap; the first row leaves room for its arcs.
    let col_of = |i: usize| {
        let r = boxes.get(i).map(|b| rank(&b.kind));
        boxes[..i.min(boxes.len())]
            .iter()
            .filter(|b| Some(rank(&b.kind)) == r)
            .count()
    };
    let arc_h = |a: usize, b: usize| 14.0 + 14.0 * col_of(a).abs_diff(col_of(b)) as f64;
    let top = GAP
        + links
            .iter()
            .filter(|(a, b, ..)| {
                a != b
                    && boxes.get(*a).map(|x| rank(&x.kind)) == boxes.get(*b).map(|x| rank(&x.kind))
                    && boxes
                        .get(*a)
                        .is_some_and(|x| rank(&x.kind) == rows.first().copied().unwrap_or(0))
            })
            .map(|(a, b, ..)| arc_h(*a, *b))
            .fold(0.0, f64::max);
    let mut placed = vec![(0.0, 0.0); boxes.len()];
    let mut width = 0.0f64;
    for (ri, r) in rows.iter().enumerate() {
        let mut col = 0.0;
        for (i, b) in boxes.iter().enumerate() {
            if rank(&b.kind) == *r {
                placed[i] = (GAP + col * (BOX_W + GAP), top + ri as f64 * ROW_H);
                col += 1.0;
            }
        }
        width = width.max(GAP + col * (BOX_W + GAP));
    }
    let height = top + rows.len().max(1) as f64 * ROW_H;
    let center = |i: usize| {
        placed
            .get(i)
            .map(|(x, y)| (x + BOX_W / 2.0, y + BOX_H / 2.0))
    };
    let edges = links
        .into_iter()
        .filter_map(|(a, b, class, gbps)| {
            let ((x1, y1), (x2, y2)) = (center(a)?, center(b)?);
            let text = format!("{class} {gbps:.1} GB/s");
            let (d, lx, ly) = if y1 == y2 && a != b {
                // Same row: a quadratic arc from the boxes' top edges, its apex `h` above them.
                let h = arc_h(a, b).min(ROW_H - BOX_H - 8.0);
                let y = y1 - BOX_H / 2.0;
                let mx = (x1 + x2) / 2.0;
                (format!("M{x1} {y} Q{mx} {} {x2} {y}", y - 2.0 * h), mx, y - h - 2.0)
            } else {
                (format!("M{x1} {y1} L{x2} {y2}"), (x1 + x2) / 2.0, (y1 + y2) / 2.0 - 3.0)
            };
            Some(view! {
                <g data-testid="topo-link" data-class=class.clone() data-gbps=gbps>
                    <title>{text.clone()}</title>
                    <path d=d fill="none" class=format!("topo-link topo-{}", class.to_lowercase()) />
                    <text x=lx y=ly text-anchor="middle" class="chart-label">
                        {text}
                    </text>
                </g>
            })
        })
        .collect_view();
    let nodes = boxes
        .into_iter()
        .zip(placed)
        .map(|(b, (x, y))| {
            view! {
                <g data-testid="topo-node" data-kind=b.kind.clone()>
                    <title>{b.label.clone()}</title>
                    <rect x=x y=y width=BOX_W height=BOX_H rx=4.0 class=format!("topo-box topo-{}", b.kind.to_lowercase()) />
                    <text x=x + BOX_W / 2.0 y=y + 19.0 text-anchor="middle" class="chart-label">
                        {b.label}
                    </text>
                </g>
            }
        })
        .collect_view();
    view! {
        <svg class="chart topology-diagram" data-testid=test_id
            viewBox=format!("0 0 {} {height}", width.max(200.0)) role="img">
            {edges}
            {nodes}
        </svg>
    }
}
