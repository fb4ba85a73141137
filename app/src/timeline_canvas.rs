//! The per-rank timeline, drawn on a canvas: one row per track, kernels coloured by operation.
//! Wheel zooms around the cursor, drag pans.

use leptos::html::Canvas;
use leptos::prelude::*;
use model::OpType;
use pipeline::{Lod, Mark, Timeline, LOD_NO_OP};
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

pub const ROW_HEIGHT: f64 = 22.0;
pub const LABEL_WIDTH: f64 = 180.0;
const RULER_HEIGHT: f64 = 20.0;

/// The visible time window, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub start_ns: f64,
    pub end_ns: f64,
}

/// `view` is the visible window: the page owns it so that a link can carry and restore it.
/// A click (not a drag) on a kernel calls `on_pick(track, span)`; `selected` is outlined, and
/// `flow` (rank, synchronised start) joins the members of the selected collective.
#[component]
pub fn TimelineCanvas(
    timeline: Signal<Timeline>,
    view: RwSignal<Option<View>>,
    selected: Signal<Option<(usize, usize)>>,
    flow: Signal<Vec<(u32, i64)>>,
    on_pick: Callback<(usize, usize)>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let down_at = RwSignal::new(None::<(f64, f64)>);
    let drag_from = RwSignal::new(None::<f64>);

    // A new timeline shows the whole run, unless the user had zoomed into a part of the last
    // one that this one still covers (a filter or clock change keeps the place; so does a
    // link's window set with it).
    // (`with`, never `get`: a clone of millions of spans per frame would cost more than drawing.)
    Effect::new(move |previous: Option<(i64, i64)>| {
        let (start_ns, end_ns) = timeline.with(|t| (t.start_ns, t.end_ns));
        let whole = |(a, z): (i64, i64)| View {
            start_ns: a as f64,
            end_ns: z as f64,
        };
        let keep = view.get_untracked().is_some_and(|v| {
            let zoomed = previous.is_some_and(|p| whole(p) != v);
            zoomed && v.end_ns > start_ns as f64 && v.start_ns < end_ns as f64
        });
        if !keep {
            view.set((end_ns > start_ns).then_some(whole((start_ns, end_ns))));
        }
        (start_ns, end_ns)
    });

    Effect::new(move |_| {
        let v = view.get();
        let sel = selected.get();
        crate::theme::revision().track();
        let el = canvas.get();
        flow.with(|flow| {
            timeline.with(|t| {
                if let (Some(el), Some(v)) = (el, v) {
                    draw(&el, t, v);
                    mark(&el, t, v, sel, flow);
                }
            })
        });
    });

    let width = move || canvas.get().map(|c| c.width() as f64).unwrap_or(1000.0);
    let on_wheel = move |e: web_sys::WheelEvent| {
        e.prevent_default();
        let Some(v) = view.get_untracked() else {
            return;
        };
        let w = width() - LABEL_WIDTH;
        let x = (e.offset_x() as f64 - LABEL_WIDTH).clamp(0.0, w);
        let at = v.start_ns + (v.end_ns - v.start_ns) * x / w;
        let factor = if e.delta_y() > 0.0 { 1.25 } else { 0.8 };
        let span = ((v.end_ns - v.start_ns) * factor).max(1000.0);
        let start = at - span * x / w;
        view.set(Some(View {
            start_ns: start,
            end_ns: start + span,
        }));
    };
    let on_down = move |e: web_sys::MouseEvent| {
        drag_from.set(Some(e.offset_x() as f64));
        down_at.set(Some((e.offset_x() as f64, e.offset_y() as f64)));
    };
    let on_leave = move |_| {
        drag_from.set(None);
        down_at.set(None);
    };
    let on_up = move |e: web_sys::MouseEvent| {
        drag_from.set(None);
        let Some((x0, y0)) = down_at.get_untracked() else {
            return;
        };
        down_at.set(None);
        let (x, y) = (e.offset_x() as f64, e.offset_y() as f64);
        // A click, not the end of a drag.
        if (x - x0).abs() > 3.0 || (y - y0).abs() > 3.0 {
            return;
        }
        let (Some(el), Some(v)) = (canvas.get_untracked(), view.get_untracked()) else {
            return;
        };
        // Mouse offsets are CSS pixels; the canvas draws in its own (scaled by CSS width).
        let scale = el.width() as f64 / f64::from(el.client_width().max(1));
        let hit =
            timeline.with_untracked(|t| hit_test(t, v, el.width() as f64, x * scale, y * scale));
        if let Some(p) = hit {
            on_pick.run(p);
        }
    };
    let on_move = move |e: web_sys::MouseEvent| {
        let (Some(from), Some(v)) = (drag_from.get_untracked(), view.get_untracked()) else {
            return;
        };
        let dx = e.offset_x() as f64 - from;
        let ns = dx * (v.end_ns - v.start_ns) / (width() - LABEL_WIDTH);
        view.set(Some(View {
            start_ns: v.start_ns - ns,
            end_ns: v.end_ns - ns,
        }));
        drag_from.set(Some(e.offset_x() as f64));
    };

    let height =
        move || RULER_HEIGHT + ROW_HEIGHT * timeline.with(|t| t.tracks.len().max(1)) as f64 + 4.0;
    view! {
        <section class="timeline">
            <p class="hint" data-testid="timeline-summary">
                {move || timeline.with(|t| format!("{} tracks, {} kernels", t.tracks.len(), t.tracks.iter().map(|k| k.spans.len()).sum::<usize>()))}
            </p>
            <canvas
                node_ref=canvas
                data-testid="timeline"
                data-window=move || view.get().map(|v| format!("{}_{}", v.start_ns as i64, v.end_ns as i64))
                width="1200"
                height=move || height().to_string()
                on:wheel=on_wheel
                on:mousedown=on_down
                on:mouseup=on_up
                on:mouseleave=on_leave
                on:mousemove=on_move
            ></canvas>
        </section>
    }
}

/// Colours by operation (RGB); [`slot`] indexes them.
pub const COLOURS: [[u8; 3]; 8] = [
    [0x4e, 0x79, 0xa7],
    [0x59, 0xa1, 0x4f],
    [0xf2, 0x8e, 0x2b],
    [0xb0, 0x7a, 0xa1],
    [0x9c, 0x75, 0x5f],
    [0xe1, 0x57, 0x59],
    [0x76, 0xb7, 0xb2],
    [0x9a, 0x9a, 0x9a],
];

/// Parallelism colours (RGB) in [`pipeline::PARALLELISMS`] order (DP, TP, PP, EP, CP), then
/// unknown: the thin row under each rank's operations.
pub const PAR_COLOURS: [[u8; 3]; 6] = [
    [0x1f, 0x77, 0xb4],
    [0xd6, 0x27, 0x28],
    [0x2c, 0xa0, 0x2c],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xc7, 0xc7, 0xc7],
];
/// The flag over a low-confidence match.
const LOW_CONFIDENCE_RGB: [u8; 3] = [0xff, 0x00, 0x66];

fn op_rgb(op_byte: u8) -> [u8; 3] {
    COLOURS[slot(OpType::ALL.get(op_byte as usize).copied())]
}

fn par_rgb(par: u8) -> [u8; 3] {
    PAR_COLOURS[(par as usize).min(PAR_COLOURS.len() - 1)]
}

/// Rows of a track, plot-relative to its top: the operations (bars), then the parallelism.
const OPS_TOP: f64 = 3.0;
const OPS_BOTTOM: f64 = ROW_HEIGHT - 8.0;
const PAR_TOP: f64 = ROW_HEIGHT - 6.0;
const PAR_BOTTOM: f64 = ROW_HEIGHT - 2.0;

fn slot(op: Option<OpType>) -> usize {
    match op {
        Some(OpType::AllReduce) => 0,
        Some(OpType::AllGather) => 1,
        Some(OpType::ReduceScatter) => 2,
        Some(OpType::Broadcast) => 3,
        Some(OpType::Reduce) => 4,
        Some(OpType::Send | OpType::Recv | OpType::SendRecv) => 5,
        Some(_) => 6,
        None => 7,
    }
}

/// A track with at most this many spans in view draws them all (exact shapes); more, and it
/// draws its summary level whose buckets are at most a pixel wide.
const REAL_SPANS_MAX: usize = 16;
/// Past this many spans in view a track draws its finest summary level even when its buckets
/// are wider than a pixel (dense bursts), so no frame walks more than a few per pixel.
const SPANS_PER_PX_MAX: f64 = 4.0;

/// The plot area's pixels for one frame: bars are painted here in wasm and reach the canvas in
/// one `putImageData`, not one canvas call per rectangle (tens of thousands with many tracks).
struct Pixels {
    rgba: Vec<u8>,
    width: usize,
    height: usize,
    /// Bars painted, for the tests.
    bars: usize,
}

impl Pixels {
    /// A plot of `rows` track rows, striped like the rows' backgrounds.
    fn new(width: usize, rows: usize, background: [u8; 3], stripe: [u8; 3]) -> Pixels {
        let height = rows * ROW_HEIGHT as usize;
        let mut rgba = vec![255u8; width * height * 4];
        let band = ROW_HEIGHT as usize * width * 4;
        for (row, pixels) in rgba.chunks_mut(band.max(4)).enumerate() {
            let [r, g, b] = if row % 2 == 0 { stripe } else { background };
            for px in pixels.chunks_exact_mut(4) {
                px[..3].copy_from_slice(&[r, g, b]);
            }
        }
        Pixels {
            rgba,
            width,
            height,
            bars: 0,
        }
    }

    /// A hollow bar: its outline in `rgb`, for a kernel without a log line.
    fn outline(&mut self, x0: f64, x1: f64, y0: f64, y1: f64, rgb: [u8; 3]) {
        if x1 - x0 < 3.0 {
            // Too narrow to show a hole: a thin stroke at mid-height.
            let mid = (y0 + y1) / 2.0;
            self.paint(x0, x1, mid - 1.0, mid + 1.0, rgb);
            return;
        }
        self.paint(x0, x1, y0, y0 + 1.0, rgb);
        self.paint(x0, x1, y1 - 1.0, y1, rgb);
        self.paint(x0, x0 + 1.0, y0, y1, rgb);
        self.paint(x1 - 1.0, x1, y0, y1, rgb);
    }

    /// Paints plot-relative columns [x0, x1) (at least one) and rows [y0, y1) in `rgb`.
    fn paint(&mut self, x0: f64, x1: f64, y0: f64, y1: f64, rgb: [u8; 3]) {
        let c0 = x0.floor().clamp(0.0, self.width as f64) as usize;
        let c1 = (x1.ceil().clamp(0.0, self.width as f64) as usize).max((c0 + 1).min(self.width));
        let r0 = y0.round().clamp(0.0, self.height as f64) as usize;
        let r1 = y1.round().clamp(0.0, self.height as f64) as usize;
        if c1 <= c0 || r1 <= r0 {
            return;
        }
        self.bars += 1;
        let [r, g, b] = rgb;
        for row in r0..r1 {
            let a = (row * self.width + c0) * 4;
            for px in self.rgba[a..a + (c1 - c0) * 4].chunks_exact_mut(4) {
                px.copy_from_slice(&[r, g, b, 255]);
            }
        }
    }
}

/// Draws every track at a cost bounded by pixels × tracks: the visible spans are found by
/// binary search, and a track with many of them in view draws its summary instead. Records on
/// the canvas how the last frame was drawn (`data-summary-tracks`, `data-rects`) for the tests.
fn draw(canvas: &web_sys::HtmlCanvasElement, t: &Timeline, v: View) {
    let Ok(Some(ctx)) = canvas.get_context("2d") else {
        return;
    };
    let Ok(ctx) = ctx.dyn_into::<CanvasRenderingContext2d>() else {
        return;
    };
    let w = canvas.width() as f64;
    let h = canvas.height() as f64;
    ctx.clear_rect(0.0, 0.0, w, h);
    let plot_w = w - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;

    let colours = crate::theme::canvas_colours();
    // Ruler: ten ticks with adaptive units, relative to the run's start.
    ctx.set_fill_style_str(&colours.ruler);
    ctx.set_font("11px sans-serif");
    for i in 0..=10 {
        let ns = v.start_ns + span * i as f64 / 10.0;
        let x = x_of(ns);
        ctx.fill_rect(x, RULER_HEIGHT - 5.0, 1.0, 5.0);
        let _ = ctx.fill_text(&format_ns(ns - t.start_ns as f64), x + 2.0, 11.0);
    }

    let mut pixels = Pixels::new(
        plot_w.max(1.0) as usize,
        t.tracks.len(),
        colours.background,
        colours.stripe,
    );
    let mut summarised = 0;
    let ns_per_px = span / plot_w;
    for (row, track) in t.tracks.iter().enumerate() {
        let y = RULER_HEIGHT + row as f64 * ROW_HEIGHT;
        let [r, g, b] = if row % 2 == 0 {
            colours.stripe
        } else {
            colours.background
        };
        ctx.set_fill_style_str(&format!("rgb({r},{g},{b})"));
        ctx.fill_rect(0.0, y, LABEL_WIDTH, ROW_HEIGHT);
        ctx.set_fill_style_str(&colours.text);
        let _ = ctx.fill_text(&track.label, 4.0, y + 15.0);
        // Plot-relative row top.
        let y = row as f64 * ROW_HEIGHT;
        let spans = &track.spans;
        let first = spans.partition_point(|s| (s.start_ns as f64) < v.start_ns);
        let last = spans.partition_point(|s| (s.start_ns as f64) <= v.end_ns);
        let level = match track.lod.level_for(ns_per_px) {
            Some(k) if last - first > REAL_SPANS_MAX => Some(k),
            _ if (last - first) as f64 > SPANS_PER_PX_MAX * plot_w => {
                (!track.lod.levels.is_empty()).then_some(0)
            }
            _ => None,
        };
        if let Some(k) = level {
            summarised += 1;
            draw_level(
                &mut pixels,
                &track.lod,
                k,
                v,
                plot_w,
                (y + OPS_TOP, y + OPS_BOTTOM),
                op_rgb,
            );
            if track.par_lod.levels.len() > k {
                draw_level(
                    &mut pixels,
                    &track.par_lod,
                    k,
                    v,
                    plot_w,
                    (y + PAR_TOP, y + PAR_BOTTOM),
                    par_rgb,
                );
            }
            continue;
        }
        // Spans starting before the window may still reach into it: back up by the longest.
        let reach = v.start_ns - track.lod.max_span_ns as f64;
        let from = spans[..first].partition_point(|s| (s.start_ns as f64) < reach);
        // At most one rectangle per pixel column and colour.
        let mut last_px = f64::NEG_INFINITY;
        for s in &spans[from..last] {
            let (x0, x1) = (x_of(s.start_ns as f64), x_of(s.end_ns as f64));
            if x1 < LABEL_WIDTH || x0 > w {
                continue;
            }
            let x0 = x0.max(LABEL_WIDTH);
            if x1 < last_px + 1.0 && x1 - x0 < 1.0 {
                continue;
            }
            last_px = x1;
            let (x0, x1) = (x0 - LABEL_WIDTH, x1 - LABEL_WIDTH);
            let rgb = COLOURS[slot(s.op)];
            match s.mark {
                Mark::Unmatched => pixels.outline(x0, x1, y + OPS_TOP, y + OPS_BOTTOM, rgb),
                Mark::LowConfidence => {
                    pixels.paint(x0, x1, y + OPS_TOP + 2.0, y + OPS_BOTTOM, rgb);
                    pixels.paint(x0, x1, y + 1.0, y + OPS_TOP + 2.0, LOW_CONFIDENCE_RGB);
                }
                Mark::Matched => pixels.paint(x0, x1, y + OPS_TOP, y + OPS_BOTTOM, rgb),
            }
            if s.par != LOD_NO_OP {
                pixels.paint(x0, x1, y + PAR_TOP, y + PAR_BOTTOM, par_rgb(s.par));
            }
        }
    }
    let rects = pixels.bars;
    if let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        wasm_bindgen::Clamped(&pixels.rgba),
        pixels.width as u32,
        pixels.height.max(1) as u32,
    ) {
        let _ = ctx.put_image_data(&image, LABEL_WIDTH, RULER_HEIGHT);
    }
    let _ = canvas.set_attribute("data-summary-tracks", &summarised.to_string());
    let _ = canvas.set_attribute("data-rects", &rects.to_string());
}

/// One track's summary level `k`, one pixel column at a time, between plot rows `rows`: the
/// column shows the bucket covering most of it, coloured by its dominant key (operation or
/// parallelism, `rgb`), as tall as its coverage (in four steps, so that neighbouring columns
/// alike merge into one rectangle).
fn draw_level(
    pixels: &mut Pixels,
    lod: &Lod,
    k: usize,
    v: View,
    plot_w: f64,
    rows: (f64, f64),
    rgb: fn(u8) -> [u8; 3],
) {
    let level = &lod.levels[k];
    let n = level.len() / 2;
    let bucket = lod.bucket_ns as f64 * (1u64 << k.min(62)) as f64;
    let origin = lod.origin_ns as f64;
    let ns_per_px = (v.end_ns - v.start_ns).max(1.0) / plot_w;
    let px_of = |ns: f64| (ns - v.start_ns) / ns_per_px;
    let px0 = px_of(origin).floor().max(0.0) as usize;
    let px1 = px_of(origin + n as f64 * bucket).ceil().clamp(0.0, plot_w) as usize;
    let inner = rows.1 - rows.0;
    let mut run: Option<(usize, u8, u8)> = None;
    let mut flush = |run: Option<(usize, u8, u8)>, end: usize| {
        if let Some((start, key, q)) = run {
            let hh = inner * f64::from(q) / 4.0;
            let top = rows.0 + (inner - hh) / 2.0;
            pixels.paint(start as f64, end as f64, top, top + hh, rgb(key));
        }
    };
    for px in px0..px1 {
        let t0 = v.start_ns + px as f64 * ns_per_px - origin;
        let b0 = (t0 / bucket).floor().max(0.0) as usize;
        let b1 = (((t0 + ns_per_px) / bucket).ceil().max(0.0) as usize).min(n);
        let best = (b0..b1)
            .map(|b| (level[2 * b], level[2 * b + 1]))
            .max_by_key(|&(_, cov)| cov)
            .filter(|&(_, cov)| cov > 0);
        let key = best.map(|(key, cov)| (key, 1 + cov / 64));
        match (run, key) {
            (Some((_, c, q)), Some((c2, q2))) if c == c2 && q == q2 => {}
            _ => {
                flush(run, px);
                run = key.map(|(c, q)| (px, c, q));
            }
        }
    }
    flush(run, px1);
}

/// The kernel under canvas point (x, y): the span containing the time there, else the nearest
/// within three pixels.
fn hit_test(t: &Timeline, v: View, width: f64, x: f64, y: f64) -> Option<(usize, usize)> {
    if x < LABEL_WIDTH || y < RULER_HEIGHT {
        return None;
    }
    let row = ((y - RULER_HEIGHT) / ROW_HEIGHT) as usize;
    let track = t.tracks.get(row)?;
    let plot_w = width - LABEL_WIDTH;
    let ns_per_px = (v.end_ns - v.start_ns).max(1.0) / plot_w;
    let at = v.start_ns + (x - LABEL_WIDTH) * ns_per_px;
    let tol = 3.0 * ns_per_px;
    let after = track
        .spans
        .partition_point(|s| (s.start_ns as f64) <= at + tol);
    // Spans before `after` start in time; the closest by distance to `at` wins (0 inside).
    (after.saturating_sub(64)..after)
        .filter_map(|i| {
            let s = &track.spans[i];
            let d = if at < s.start_ns as f64 {
                s.start_ns as f64 - at
            } else if at > s.end_ns as f64 {
                at - s.end_ns as f64
            } else {
                0.0
            };
            (d <= tol).then_some((d, i))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, i)| (row, i))
}

/// Outlines the selected kernel and joins the members of its collective, rank by rank.
fn mark(
    canvas: &web_sys::HtmlCanvasElement,
    t: &Timeline,
    v: View,
    sel: Option<(usize, usize)>,
    flow: &[(u32, i64)],
) {
    let Some(ctx) = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    let plot_w = canvas.width() as f64 - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    ctx.set_stroke_style_str(&crate::theme::canvas_colours().mark);
    ctx.set_line_width(2.0);
    // Rows of the members: a track's label starts with its global rank.
    let row_of = |rank: u32| {
        let prefix = format!("rank {rank} ");
        t.tracks.iter().position(|tr| tr.label.starts_with(&prefix))
    };
    let mut points: Vec<(f64, f64)> = flow
        .iter()
        .filter_map(|&(rank, start)| {
            let row = row_of(rank)?;
            Some((
                x_of(start as f64),
                RULER_HEIGHT + row as f64 * ROW_HEIGHT + ROW_HEIGHT / 2.0,
            ))
        })
        .collect();
    points.sort_by(|a, b| a.1.total_cmp(&b.1));
    if points.len() > 1 {
        ctx.begin_path();
        ctx.move_to(points[0].0, points[0].1);
        for p in &points[1..] {
            ctx.line_to(p.0, p.1);
        }
        ctx.stroke();
    }
    if let Some(s) = sel.and_then(|(row, i)| Some((row, t.tracks.get(row)?.spans.get(i)?))) {
        let (row, s) = s;
        let y = RULER_HEIGHT + row as f64 * ROW_HEIGHT;
        let (x0, x1) = (x_of(s.start_ns as f64), x_of(s.end_ns as f64));
        ctx.stroke_rect(
            x0 - 1.0,
            y + 1.0,
            (x1 - x0).max(1.0) + 2.0,
            ROW_HEIGHT - 2.0,
        );
    }
}

fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
