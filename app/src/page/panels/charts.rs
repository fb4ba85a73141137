//! Small SVG charts for the analysis panels: bars with a reference mark per bar (observed volume
//! per rank against its theoretical value), a log-scale histogram with one marked bucket
//! (message sizes against the activation size b·s·h·β), a log-log scatter and topology
//! diagrams. Every chart has its axes with ticks in the unit of its values, and its axes' names;
//! bars carry their value when they fit. Inputs are plain, already labelled numbers; every text
//! goes through Leptos, which escapes it.

use leptos::prelude::*;
use ncclscope_app::protocol::format::{human_bytes, human_rate, significant};

/// What a chart's values are, for its axis ticks and bar values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Unit {
    /// Counts (operations, kernels).
    #[default]
    Count,
    /// Bytes, in the unit of their magnitude.
    Bytes,
}

impl Unit {
    fn text(self, v: f64) -> String {
        match self {
            Unit::Count if v >= 1e6 => format!("{}M", significant(v / 1e6, 3)),
            Unit::Count if v >= 1e4 => format!("{}k", significant(v / 1e3, 3)),
            Unit::Count => significant(v, 3),
            Unit::Bytes => human_bytes(v.max(0.0) as u64),
        }
    }
}

/// Round ticks from 0 to at least `top`: a step of 1, 2 or 5 × 10^k giving at most `max` steps.
pub fn nice_ticks(top: f64, max: usize) -> Vec<f64> {
    if top.is_nan() || top <= 0.0 || !top.is_finite() {
        return vec![0.0, 1.0];
    }
    let raw = top / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    let n = (top / step - 1e-9).ceil().max(1.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

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
const H: f64 = 200.0;
/// Room for the y axis's ticks and name, the x axis's labels and name, and the values on top.
const PAD_LEFT: f64 = 62.0;
const PAD_RIGHT: f64 = 8.0;
const PAD_TOP: f64 = 16.0;
const PAD_BOTTOM: f64 = 36.0;

/// Charts with more bars than this (one per rank of a large run: thousands of SVG elements)
/// are drawn in an animation frame of their own ([`crate::deferred`]).
pub const DEFER_BARS: usize = 64;
/// Bars carry their value above them up to this many bars.
const VALUES_UP_TO: usize = 24;

/// Vertical bars from a zero baseline, on a y axis of round ticks in `unit`, with the axes named
/// `x_name` and `y_name`; a reference is a dark tick across its bar.
#[component]
pub fn BarChart(
    bars: Vec<Bar>,
    #[prop(into)] test_id: String,
    #[prop(optional)] unit: Unit,
    #[prop(optional, into)] x_name: String,
    #[prop(optional, into)] y_name: String,
) -> impl IntoView {
    let axes = Axes {
        unit,
        x_name,
        y_name,
    };
    if bars.len() <= DEFER_BARS {
        return bar_chart(&bars, test_id, &axes).into_any();
    }
    let bars = std::sync::Arc::new(bars);
    let axes = std::sync::Arc::new(axes);
    ncclscope_app::page_logic::deferred::deferred(
        move || bar_chart(&bars, test_id.clone(), &axes),
        || view! { <svg class="chart" data-pending="" viewBox=format!("0 0 {W} {H}") role="img" aria-label="chart (drawing)"></svg> },
    )
    .into_any()
}

/// What a bar chart's axes say.
struct Axes {
    unit: Unit,
    x_name: String,
    y_name: String,
}

/// The y axis of a chart whose plot spans `bottom` (pixels) for values 0..`ticks.last()`: its
/// grid lines, tick labels and name.
fn y_axis(
    ticks: &[f64],
    unit: Unit,
    name: &str,
    bottom: f64,
    y: impl Fn(f64) -> f64,
) -> impl IntoView {
    let lines = ticks
        .iter()
        .map(|&t| {
            view! {
                <g>
                    <line x1=PAD_LEFT x2=W - PAD_RIGHT y1=y(t) y2=y(t) class="chart-grid" />
                    <text x=PAD_LEFT - 4.0 y=y(t) + 3.5 text-anchor="end" class="chart-label">{unit.text(t)}</text>
                </g>
            }
        })
        .collect_view();
    let mid = (PAD_TOP + bottom) / 2.0;
    view! {
        {lines}
        <line x1=PAD_LEFT x2=PAD_LEFT y1=PAD_TOP y2=bottom class="chart-axis" />
        <text x=12.0 y=mid text-anchor="middle" class="chart-axis-name"
            transform=format!("rotate(-90 12 {mid})")>{name.to_string()}</text>
    }
}

fn bar_chart(bars: &[Bar], test_id: String, axes: &Axes) -> impl IntoView {
    let top = bars
        .iter()
        .flat_map(|b| [b.value, b.reference.unwrap_or(0.0)])
        .fold(0.0f64, f64::max);
    let ticks = nice_ticks(top, 4);
    let top = ticks.last().copied().unwrap_or(1.0).max(1e-9);
    let bottom = H - PAD_BOTTOM;
    let n = bars.len().max(1) as f64;
    let slot = (W - PAD_LEFT - PAD_RIGHT) / n;
    let y = move |v: f64| PAD_TOP + (bottom - PAD_TOP) * (1.0 - v / top);
    // Label every bar only when they fit; else every k-th.
    let every = ((n * 34.0) / (W - PAD_LEFT)).ceil().max(1.0) as usize;
    let values = bars.len() <= VALUES_UP_TO;
    let unit = axes.unit;
    let items = bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let x = PAD_LEFT + i as f64 * slot + slot * 0.1;
            let w = (slot * 0.8).max(1.0);
            let label = (i % every == 0).then(|| {
                view! {
                    <text x=x + w / 2.0 y=bottom + 13.0 text-anchor="middle" class="chart-label">
                        {b.label.clone()}
                    </text>
                }
            });
            let value = values.then(|| {
                view! {
                    <text x=x + w / 2.0 y=y(b.value) - 3.0 text-anchor="middle" class="chart-value">
                        {unit.text(b.value)}
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
                    <rect x=x y=y(b.value) width=w height=(bottom - y(b.value)).max(0.0)
                        class="chart-bar" />
                    {reference}
                    {value}
                    {label}
                </g>
            }
        })
        .collect_view();
    let aria = format!("{} by {}", axes.y_name, axes.x_name);
    view! {
        <svg class="chart" data-testid=test_id viewBox=format!("0 0 {W} {H}") role="img" aria-label=aria>
            {y_axis(&ticks, unit, &axes.y_name, bottom, y)}
            <line x1=PAD_LEFT x2=W - PAD_RIGHT y1=bottom y2=bottom class="chart-axis" />
            <text x=(PAD_LEFT + W) / 2.0 y=H - 4.0 text-anchor="middle" class="chart-axis-name">{axes.x_name.clone()}</text>
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
/// (counts span orders of magnitude, ticks at powers of ten); the bucket holding `mark` is
/// outlined.
#[component]
pub fn Histogram(
    buckets: Vec<Bucket>,
    mark: Option<u64>,
    #[prop(into)] test_id: String,
) -> impl IntoView {
    let most = buckets.iter().map(|b| b.count).max().unwrap_or(0);
    let decades = ((most as f64 + 1.0).log10().ceil()).max(1.0);
    let bottom = H - PAD_BOTTOM;
    let y =
        move |count: f64| PAD_TOP + (bottom - PAD_TOP) * (1.0 - (count + 1.0).log10() / decades);
    let n = buckets.len().max(1) as f64;
    let slot = (W - PAD_LEFT - PAD_RIGHT) / n;
    let every = ((n * 44.0) / (W - PAD_LEFT)).ceil().max(1.0) as usize;
    let ticks = (0..=decades as i32)
        .map(|e| {
            let v = 10f64.powi(e) - 1.0;
            view! {
                <g>
                    <line x1=PAD_LEFT x2=W - PAD_RIGHT y1=y(v) y2=y(v) class="chart-grid" />
                    <text x=PAD_LEFT - 4.0 y=y(v) + 3.5 text-anchor="end" class="chart-label">
                        {Unit::Count.text(v)}
                    </text>
                </g>
            }
        })
        .collect_view();
    let items = buckets
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let x = PAD_LEFT + i as f64 * slot + slot * 0.075;
            let w = (slot * 0.85).max(1.0);
            let top = y(b.count as f64);
            let marked =
                mark.is_some_and(|m| m >= b.lower_bytes && m < b.lower_bytes.saturating_mul(2));
            let class = if marked {
                "chart-bar chart-marked"
            } else {
                "chart-bar"
            };
            let label = (i % every == 0 || marked).then(|| {
                view! {
                    <text x=x + w / 2.0 y=bottom + 13.0 text-anchor="middle" class="chart-label">
                        {b.label.clone()}
                    </text>
                }
            });
            view! {
                <g data-bucket=b.lower_bytes data-marked=marked.to_string()>
                    <title>{format!("{}: {} operations", b.label, b.count)}</title>
                    <rect x=x y=top width=w height=(bottom - top).max(0.0) class=class />
                    {label}
                </g>
            }
        })
        .collect_view();
    let mid = (PAD_TOP + bottom) / 2.0;
    view! {
        <svg class="chart" data-testid=test_id viewBox=format!("0 0 {W} {H}") role="img"
            aria-label="operations by message size (log scales)">
            {ticks}
            <line x1=PAD_LEFT x2=PAD_LEFT y1=PAD_TOP y2=bottom class="chart-axis" />
            <line x1=PAD_LEFT x2=W - PAD_RIGHT y1=bottom y2=bottom class="chart-axis" />
            <text x=12.0 y=mid text-anchor="middle" class="chart-axis-name"
                transform=format!("rotate(-90 12 {mid})")>"operations (log)"</text>
            <text x=(PAD_LEFT + W) / 2.0 y=H - 4.0 text-anchor="middle" class="chart-axis-name">"message size (bytes, ≥ bucket)"</text>
            {items}
        </svg>
    }
}

/// One scatter point: position (bytes, GB/s), how many kernels it stands for, and its colour
/// (its operation's).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub weight: u64,
    pub rgb: [u8; 3],
    pub group: String,
}

/// A horizontal reference line at `y` (a link class's bus bandwidth).
#[derive(Clone, Debug, PartialEq)]
pub struct HLine {
    pub label: String,
    pub y: f64,
}

const SW: f64 = 680.0;
const SH: f64 = 300.0;
const S_LEFT: f64 = 70.0;
/// The top holds the legend of the points' colours.
const S_TOP: f64 = 26.0;
/// The right margin holds the limit lines' labels, clear of the points.
const S_RIGHT: f64 = 112.0;
const S_BOTTOM: f64 = 40.0;

/// Decades spanning `lo..=hi` (both > 0): the axis range, whole powers of ten.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let a = lo.log10().floor();
    let b = hi.log10().ceil();
    (a, if b > a { b } else { a + 1.0 })
}

/// Log-log scatter of message size (bytes) against bus bandwidth (GB/s), ticks in the units of
/// their magnitude; a point's radius grows with the kernels it stands for and its colour is its
/// group's (the operation), named in the legend; the limit lines' labels sit in the right margin.
/// Every point carries its values as data attributes (tests and the SVG export read them).
#[component]
pub fn Scatter(
    points: Vec<Point>,
    lines: Vec<HLine>,
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
    let right = SW - S_RIGHT;
    let bottom = SH - S_BOTTOM;
    let px = move |v: f64| S_LEFT + (right - S_LEFT) * (v.log10() - xa) / (xb - xa);
    let py = move |v: f64| S_TOP + (bottom - S_TOP) * (1.0 - (v.log10() - ya) / (yb - ya));
    let top_weight = points.iter().map(|p| p.weight).max().unwrap_or(1).max(1) as f64;
    let x_ticks = (xa as i64..=xb as i64)
        .map(|e| {
            let x = px(10f64.powi(e as i32));
            view! {
                <g>
                    <line x1=x x2=x y1=S_TOP y2=bottom class="chart-grid" />
                    <text x=x y=bottom + 14.0 text-anchor="middle" class="chart-label">
                        {human_bytes(10f64.powi(e as i32).round() as u64)}
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
                    <line x1=S_LEFT x2=right y1=y y2=y class="chart-grid" />
                    <text x=S_LEFT - 4.0 y=y + 3.5 text-anchor="end" class="chart-label">
                        {human_rate(10f64.powi(e as i32))}
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
                    <title>{format!("{} limit: {}", l.label, human_rate(l.y))}</title>
                    <line x1=S_LEFT x2=right y1=y y2=y class="chart-reference" />
                    <text x=right + 4.0 y=y + 3.5 text-anchor="start" class="chart-label">
                        {format!("{} {}", l.label, human_rate(l.y))}
                    </text>
                </g>
            }
        })
        .collect_view();
    let groups = group_colours(&points);
    let colour_of = |g: &str| {
        groups
            .iter()
            .find(|(name, _)| name == g)
            .map_or([0x9a; 3], |(_, c)| *c)
    };
    let dots = points
        .into_iter()
        .filter(|p| p.x > 0.0 && p.y > 0.0)
        .map(|p| {
            let r = 2.0 + 4.0 * (p.weight as f64 / top_weight).sqrt();
            let [cr, cg, cb] = colour_of(&p.group);
            view! {
                <circle cx=px(p.x) cy=py(p.y) r=r class="chart-point" data-testid="scatter-point"
                    fill=format!("rgb({cr},{cg},{cb})") stroke=format!("rgb({cr},{cg},{cb})")
                    data-x=p.x data-y=p.y data-weight=p.weight data-group=p.group.clone()>
                    <title>{format!("{}: {}, {}: {} kernels", p.group, human_bytes(p.x.round() as u64), human_rate(p.y), p.weight)}</title>
                </circle>
            }
        })
        .collect_view();
    let mut at = S_LEFT;
    let legend = groups
        .into_iter()
        .map(|(g, [r, gr, b])| {
            let x = at;
            at += 22.0 + 6.5 * g.chars().count() as f64;
            let name = g.clone();
            view! {
                <g class="chart-legend" data-group=g>
                    <circle cx=x + 4.0 cy=10.0 r=4.0 fill=format!("rgb({r},{gr},{b})") />
                    <text x=x + 11.0 y=13.5 class="chart-label">{name}</text>
                </g>
            }
        })
        .collect_view();
    let mid = (S_TOP + bottom) / 2.0;
    view! {
        <svg class="chart chart-wide" data-testid=test_id viewBox=format!("0 0 {SW} {SH}") role="img"
            aria-label="bus bandwidth against message size, log-log, per operation">
            {x_ticks}
            {y_ticks}
            <line x1=S_LEFT x2=S_LEFT y1=S_TOP y2=bottom class="chart-axis" />
            <line x1=S_LEFT x2=right y1=bottom y2=bottom class="chart-axis" />
            <text x=12.0 y=mid text-anchor="middle" class="chart-axis-name"
                transform=format!("rotate(-90 12 {mid})")>"bus bandwidth (log)"</text>
            <text x=(S_LEFT + right) / 2.0 y=SH - 6.0 text-anchor="middle" class="chart-axis-name">"message size (log)"</text>
            {limit_lines}
            {dots}
            {legend}
        </svg>
    }
}

/// Each group (operation) of a scatter and its colour, in the points' order: the point's own
/// colour (the timeline's), made darker until no earlier group has it, so operations that share
/// a colour on the timeline (Send, Recv and SendRecv, one family there) are told apart here.
pub fn group_colours(points: &[Point]) -> Vec<(String, [u8; 3])> {
    let mut groups: Vec<(String, [u8; 3])> = Vec::new();
    for p in points {
        if groups.iter().any(|(g, _)| *g == p.group) {
            continue;
        }
        let mut rgb = p.rgb;
        for _ in 0..4 {
            if !groups.iter().any(|(_, c)| *c == rgb) {
                break;
            }
            rgb = rgb.map(|v| (f64::from(v) * 0.62).round() as u8);
        }
        groups.push((p.group.clone(), rgb));
    }
    groups
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
    let mut labelled: Vec<(f64, f64)> = Vec::new();
    let mut kinds: Vec<(String, usize)> = Vec::new();
    let edges = links
        .into_iter()
        .filter_map(|(a, b, class, gbps)| {
            let ((x1, y1), (x2, y2)) = (center(a)?, center(b)?);
            let text = format!("{class} {}", human_rate(gbps));
            let (d, lx, ly) = if y1 == y2 && a != b {
                // Same row: a quadratic arc from the boxes' top edges, its apex `h` above them.
                let h = arc_h(a, b).min(ROW_H - BOX_H - 8.0);
                let y = y1 - BOX_H / 2.0;
                let mx = (x1 + x2) / 2.0;
                (format!("M{x1} {y} Q{mx} {} {x2} {y}", y - 2.0 * h), mx, y - h - 2.0)
            } else {
                (format!("M{x1} {y1} L{x2} {y2}"), (x1 + x2) / 2.0, (y1 + y2) / 2.0 - 3.0)
            };
            // A label only where it collides with none placed before (every link's is in its
            // title, and the legend counts them).
            let half = 3.0 * text.chars().count() as f64;
            let free = !labelled
                .iter()
                .any(|&(x, y): &(f64, f64)| (x - lx).abs() < half + 30.0 && (y - ly).abs() < 12.0);
            if free {
                labelled.push((lx, ly));
            }
            match kinds.iter_mut().find(|(t, _)| *t == text) {
                Some((_, n)) => *n += 1,
                None => kinds.push((text.clone(), 1)),
            }
            Some(view! {
                <g data-testid="topo-link" data-class=class.clone() data-gbps=gbps>
                    <title>{text.clone()}</title>
                    <path d=d fill="none" class=format!("topo-link topo-{}", class.to_lowercase()) />
                    {free.then(|| view! {
                        <text x=lx y=ly text-anchor="middle" class="chart-label topo-label">{text}</text>
                    })}
                </g>
            })
        })
        .collect_view();
    let legend = kinds
        .iter()
        .map(|(t, n)| format!("{t} ×{n}"))
        .collect::<Vec<_>>()
        .join(" · ");
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
    let (width, legend_y) = (width.max(200.0), height + 4.0);
    view! {
        <svg class="chart topology-diagram" data-testid=test_id
            viewBox=format!("0 0 {width} {}", height + 16.0) role="img" aria-label="topology: devices and their links">
            {edges}
            {nodes}
            <text x=GAP y=legend_y class="chart-label topo-legend">{format!("links: {legend}")}</text>
        </svg>
    }
}
