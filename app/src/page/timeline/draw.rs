//! Drawing the timeline canvas: the rows ([`Layout`]: node headers, tracks, NVTX rows), each
//! track's kernels coloured by operation over a thin row coloured by parallelism, the selected
//! kernel and its collective's members, the selected range and the time ruler. A frame costs
//! pixels × rows however many kernels there are: visible spans are found by binary search, a
//! track with many of them in view draws its summary level, and bars are painted into one pixel
//! buffer that reaches the canvas in one `putImageData`.

use model::OpType;
use ncclscope_app::page_logic::timeline_math::ticks;
use ncclscope_app::page_logic::track_rows::{Layout, Row};
use timeline::{Lod, Mark, Marker, MarkerKind, Timeline, LOD_NO_OP};
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

use crate::page::theme::CanvasColours;

/// The label column's width and the ruler's height (canvas pixels, which are CSS pixels).
pub const LABEL_WIDTH: f64 = 180.0;
pub const RULER_HEIGHT: f64 = 20.0;
/// Rows are this tall at least, and stretch up to the most to fill the box.
pub const ROW_MIN: f64 = 22.0;
pub const ROW_MAX: f64 = 48.0;

/// The visible time window, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub start_ns: f64,
    pub end_ns: f64,
}

impl From<(f64, f64)> for View {
    fn from((start_ns, end_ns): (f64, f64)) -> View {
        View { start_ns, end_ns }
    }
}

/// Where the rows are: their height, and how far down the rows the canvas's first row is
/// (canvas pixels below the ruler).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    pub row_px: f64,
    pub offset_px: f64,
}

impl Geometry {
    /// Row `r`'s top on the canvas.
    pub fn y_of(&self, r: usize) -> f64 {
        RULER_HEIGHT + r as f64 * self.row_px - self.offset_px
    }

    /// The row at canvas height `y`, if below the ruler.
    pub fn row_at(&self, y: f64) -> Option<usize> {
        (y >= RULER_HEIGHT).then(|| ((y - RULER_HEIGHT + self.offset_px) / self.row_px) as usize)
    }
}

/// A canvas's 2D context (`None` where the browser gives none).
pub fn context_2d(canvas: &web_sys::HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
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

/// Parallelism colours (RGB) in [`timeline::PARALLELISMS`] order (DP, TP, PP, EP, CP), then
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

/// The colour slot of an operation (the legend's order).
pub fn slot(op: Option<OpType>) -> usize {
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

/// The colour of an operation named as NCCL names it (`AllReduce`, `SendRecv`, ...).
pub fn op_colour(name: &str) -> [u8; 3] {
    COLOURS[slot(OpType::ALL.iter().copied().find(|o| o.name() == name))]
}

/// A track with at most this many spans in view draws them all (exact shapes); more, and it
/// draws its summary level whose buckets are at most a pixel wide.
const REAL_SPANS_MAX: usize = 16;
/// Past this many spans in view a track draws its finest summary level even when its buckets
/// are wider than a pixel (dense bursts), so no frame walks more than a few per pixel.
const SPANS_PER_PX_MAX: f64 = 4.0;

/// A row's bands, from its top: the operations' bars, then the parallelism's thin row.
#[derive(Clone, Copy)]
struct Bands {
    ops: (f64, f64),
    par: (f64, f64),
}

impl Bands {
    fn of(row_px: f64) -> Bands {
        Bands {
            ops: (3.0, row_px - 8.0),
            par: (row_px - 6.0, row_px - 2.0),
        }
    }
}

/// The plot area's pixels for one frame: bars are painted here in wasm and reach the canvas in
/// one `putImageData`, not one canvas call per rectangle (tens of thousands with many tracks).
/// The area shows `height` pixel rows from `offset` down (plot coordinates: row `r` starts at
/// `r × row_px`); paints take plot coordinates and are cut to the area.
struct Pixels {
    rgba: Vec<u8>,
    width: usize,
    height: usize,
    offset: f64,
    /// Bars painted, for the tests.
    bars: usize,
}

impl Pixels {
    /// The area, each row in its background (`shade(row)`), the rows past the last in `empty`.
    fn new(
        width: usize,
        height: usize,
        g: Geometry,
        rows: usize,
        shade: impl Fn(usize) -> [u8; 3],
        empty: [u8; 3],
    ) -> Pixels {
        let mut rgba = vec![255u8; width * height * 4];
        let first = g.offset_px.max(0.0) as usize;
        for (y, pixels) in rgba.chunks_mut((width * 4).max(4)).enumerate() {
            let row = ((first + y) as f64 / g.row_px) as usize;
            let [r, g, b] = if row < rows { shade(row) } else { empty };
            for px in pixels.chunks_exact_mut(4) {
                px[..3].copy_from_slice(&[r, g, b]);
            }
        }
        Pixels {
            rgba,
            width,
            height,
            offset: first as f64,
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
        let r0 = (y0.round() - self.offset).clamp(0.0, self.height as f64) as usize;
        let r1 = (y1.round() - self.offset).clamp(0.0, self.height as f64) as usize;
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

fn rgb_text([r, g, b]: [u8; 3]) -> String {
    format!("rgb({r},{g},{b})")
}

/// A node header's background: the stripe darkened towards the text.
fn header_rgb(c: &CanvasColours) -> [u8; 3] {
    let [r, g, b] = c.stripe;
    let toward = |x: u8| {
        if x > 128 {
            x.saturating_sub(18)
        } else {
            x.saturating_add(18)
        }
    };
    [toward(r), toward(g), toward(b)]
}

/// What a frame needs besides the canvas.
pub struct Frame<'a> {
    pub t: &'a Timeline,
    pub layout: &'a Layout,
    pub view: View,
    pub g: Geometry,
    pub colours: &'a CanvasColours,
    /// Whether the NVTX rows are folded (their owner's label says so).
    pub markers_folded: bool,
}

/// Draws the rows the canvas shows. Records on the canvas how the frame was drawn
/// (`data-summary-tracks`, `data-rects`) for the tests.
pub fn draw(canvas: &web_sys::HtmlCanvasElement, f: &Frame) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let (t, v, g) = (f.t, f.view, f.g);
    let w = canvas.width() as f64;
    let h = canvas.height() as f64;
    ctx.clear_rect(0.0, 0.0, w, h);
    let plot_w = (w - LABEL_WIDTH).max(1.0);
    ctx.set_font("11px sans-serif");
    let rows = &f.layout.rows;
    let header = header_rgb(f.colours);
    let shade = |r: usize| match rows.get(r) {
        Some(Row::Group { .. }) => header,
        _ if r.is_multiple_of(2) => f.colours.stripe,
        _ => f.colours.background,
    };
    let plot_h = (h - RULER_HEIGHT).max(1.0);
    let mut pixels = Pixels::new(
        plot_w as usize,
        plot_h as usize,
        g,
        rows.len(),
        shade,
        f.colours.background,
    );
    let first_row = (g.offset_px / g.row_px).floor() as usize;
    let last_row = (((g.offset_px + plot_h) / g.row_px).ceil() as usize).min(rows.len());
    let mut summarised = 0;
    let mut marker_rows = Vec::new();
    let bands = Bands::of(g.row_px);
    for (r, row) in rows.iter().enumerate().take(last_row).skip(first_row) {
        let y = g.y_of(r);
        ctx.set_fill_style_str(&rgb_text(shade(r)));
        ctx.fill_rect(0.0, y, LABEL_WIDTH, g.row_px);
        ctx.set_fill_style_str(&f.colours.text);
        let text_y = y + g.row_px / 2.0 + 4.0;
        match row {
            Row::Group {
                host,
                tracks,
                collapsed,
            } => {
                let mark = if *collapsed { "▸" } else { "▾" };
                let name = if host.is_empty() { "no host" } else { host };
                let _ = ctx.fill_text(&format!("{mark} {name} · {tracks} tracks"), 4.0, text_y);
            }
            Row::Marker(m) => {
                if let Some(mr) = t.markers.get(*m) {
                    let label = mr.label.split(" (").next().unwrap_or(&mr.label);
                    let _ = ctx.fill_text(&format!("   {label}"), 4.0, text_y);
                }
                marker_rows.push((r, *m));
            }
            Row::Track(i) => {
                let track = &t.tracks[*i];
                let fold = match f.layout.markers_under {
                    Some(owner) if owner == *i && f.markers_folded => "▸ ",
                    Some(owner) if owner == *i => "▾ ",
                    _ => "",
                };
                let _ = ctx.fill_text(
                    &format!("{fold}{}", shown_label(&track.label, f.layout)),
                    4.0,
                    text_y,
                );
                let level = draw_track(&mut pixels, track, v, plot_w, r as f64 * g.row_px, bands);
                summarised += usize::from(level);
            }
        }
    }
    // The ruler, over the label of a row cut at the top.
    ctx.clear_rect(0.0, 0.0, w, RULER_HEIGHT);
    ruler(canvas, &ctx, t, v, plot_w, &f.colours.ruler);
    let rects = pixels.bars;
    if let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        wasm_bindgen::Clamped(&pixels.rgba),
        pixels.width as u32,
        pixels.height.max(1) as u32,
    ) {
        let _ = ctx.put_image_data(&image, LABEL_WIDTH, RULER_HEIGHT);
    }
    draw_markers(&ctx, f, &marker_rows, plot_w);
    let _ = canvas.set_attribute("data-summary-tracks", &summarised.to_string());
    let _ = canvas.set_attribute("data-rects", &rects.to_string());
}

/// A track's label as the canvas shows it: without the node when the node heads its group.
fn shown_label<'a>(label: &'a str, layout: &Layout) -> std::borrow::Cow<'a, str> {
    let grouped = layout.rows.iter().any(|r| matches!(r, Row::Group { .. }));
    if !grouped {
        return label.into();
    }
    let parts: Vec<&str> = label.split(" · ").collect();
    match parts.as_slice() {
        [rank, _host, gpu] if rank.starts_with("rank ") => format!("{rank} · {gpu}").into(),
        _ => label.into(),
    }
}

/// One track's kernels into `pixels` at plot height `top`; whether its summary was drawn.
fn draw_track(
    pixels: &mut Pixels,
    track: &timeline::Track,
    v: View,
    plot_w: f64,
    top: f64,
    bands: Bands,
) -> bool {
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| (ns - v.start_ns) / span * plot_w;
    let ns_per_px = span / plot_w;
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
    let (ops, par) = (
        (top + bands.ops.0, top + bands.ops.1),
        (top + bands.par.0, top + bands.par.1),
    );
    if let Some(k) = level {
        draw_level(pixels, &track.lod, k, v, plot_w, ops, op_rgb);
        if track.par_lod.levels.len() > k {
            draw_level(pixels, &track.par_lod, k, v, plot_w, par, par_rgb);
        }
        return true;
    }
    // Spans starting before the window may still reach into it: back up by the longest.
    let reach = v.start_ns - track.lod.max_span_ns as f64;
    let from = spans[..first].partition_point(|s| (s.start_ns as f64) < reach);
    // At most one rectangle per pixel column and colour.
    let mut last_px = f64::NEG_INFINITY;
    for s in &spans[from..last] {
        let (x0, x1) = (x_of(s.start_ns as f64), x_of(s.end_ns as f64));
        if x1 < 0.0 || x0 > plot_w {
            continue;
        }
        let x0 = x0.max(0.0);
        if x1 < last_px + 1.0 && x1 - x0 < 1.0 {
            continue;
        }
        last_px = x1;
        let rgb = COLOURS[slot(s.op)];
        match s.mark {
            Mark::Unmatched => pixels.outline(x0, x1, ops.0, ops.1, rgb),
            Mark::LowConfidence => {
                pixels.paint(x0, x1, ops.0 + 2.0, ops.1, rgb);
                pixels.paint(x0, x1, top + 1.0, ops.0 + 2.0, LOW_CONFIDENCE_RGB);
            }
            Mark::Matched => pixels.paint(x0, x1, ops.0, ops.1, rgb),
        }
        if s.par != LOD_NO_OP {
            pixels.paint(x0, x1, par.0, par.1, par_rgb(s.par));
        }
    }
    false
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

/// An NVTX range's fill: iterations alternate two blues, phases have a colour each.
fn marker_fill(kind: u8, index: usize) -> &'static str {
    match kind {
        k if k == MarkerKind::Iteration as u8 => {
            if index.is_multiple_of(2) {
                "#c9d9ea"
            } else {
                "#a9c2dc"
            }
        }
        k if k == MarkerKind::Forward as u8 => "#a6d96a",
        k if k == MarkerKind::Backward as u8 => "#fdae61",
        _ => "#c2a5cf",
    }
}

/// The NVTX rows shown, `(canvas row, marker row)`: each range a bar with its text inside when
/// it fits, at most one per pixel column. Records the ranges drawn (`data-nvtx-drawn`).
fn draw_markers(ctx: &CanvasRenderingContext2d, f: &Frame, rows: &[(usize, usize)], plot_w: f64) {
    let v = f.view;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    let right = LABEL_WIDTH + plot_w;
    let mut drawn = 0;
    for &(r, m) in rows {
        let Some(markers) = f.t.markers.get(m) else {
            continue;
        };
        let y = f.g.y_of(r).max(RULER_HEIGHT);
        let bottom = f.g.y_of(r) + f.g.row_px;
        if bottom <= RULER_HEIGHT {
            continue;
        }
        let mut last_px = f64::NEG_INFINITY;
        for (i, mk) in markers.ranges.iter().enumerate() {
            let (x0, x1) = (x_of(mk.start_ns as f64), x_of(mk.end_ns as f64));
            if x1 < LABEL_WIDTH || x0 > right || (x1 < last_px + 1.0 && x1 - x0 < 1.0) {
                continue;
            }
            last_px = last_px.max(x1);
            let (x0, x1) = (x0.max(LABEL_WIDTH), x1.min(right));
            ctx.set_fill_style_str(marker_fill(mk.kind, i));
            ctx.fill_rect(x0, y + 3.0, (x1 - x0).max(1.0), (bottom - y - 6.0).max(1.0));
            drawn += 1;
            marker_label(ctx, mk, x0, x1, (y + bottom) / 2.0 + 4.0);
        }
    }
    if let Some(c) = ctx.canvas() {
        let _ = c.set_attribute("data-nvtx-drawn", &drawn.to_string());
    }
}

/// The range's text inside its bar, when it fits.
fn marker_label(ctx: &CanvasRenderingContext2d, m: &Marker, x0: f64, x1: f64, y: f64) {
    if x1 - x0 < 30.0 {
        return;
    }
    let fits = ctx
        .measure_text(&m.text)
        .is_ok_and(|tm| tm.width() + 6.0 <= x1 - x0);
    if fits {
        ctx.set_fill_style_str("#222");
        let _ = ctx.fill_text(&m.text, x0 + 3.0, y);
    }
}

/// The NVTX range under canvas point (x, y) of marker row `m`, if any: its text.
pub fn marker_at(t: &Timeline, m: usize, v: View, plot_w: f64, x: f64) -> Option<String> {
    let at = v.start_ns + (x - LABEL_WIDTH) / plot_w * (v.end_ns - v.start_ns);
    t.markers
        .get(m)?
        .ranges
        .iter()
        .filter(|r| (r.start_ns as f64) <= at && at <= r.end_ns as f64)
        .min_by_key(|r| r.end_ns - r.start_ns)
        .map(|r| r.text.clone())
}

/// The kernel of track `track` (at canvas row `row`) under canvas x: the span containing the
/// time there, else the nearest within three pixels.
pub fn hit_track(t: &Timeline, track: usize, v: View, plot_w: f64, x: f64) -> Option<usize> {
    if x < LABEL_WIDTH {
        return None;
    }
    let track = t.tracks.get(track)?;
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
        .map(|(_, i)| i)
}

/// Outlines the selected kernel and joins the members of its collective, rank by rank.
pub fn mark(
    canvas: &web_sys::HtmlCanvasElement,
    f: &Frame,
    sel: Option<(usize, usize)>,
    flow: &[(u32, i64)],
) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    // Below the ruler only: rows scrolled away are under it.
    ctx.save();
    ctx.begin_path();
    ctx.rect(
        0.0,
        RULER_HEIGHT,
        canvas.width() as f64,
        canvas.height() as f64 - RULER_HEIGHT,
    );
    ctx.clip();
    let plot_w = (canvas.width() as f64 - LABEL_WIDTH).max(1.0);
    let v = f.view;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    ctx.set_stroke_style_str(&f.colours.mark);
    ctx.set_line_width(2.0);
    let labels: Vec<&str> = f.t.tracks.iter().map(|t| t.label.as_str()).collect();
    let mut points: Vec<(f64, f64)> = flow
        .iter()
        .filter_map(|&(rank, start)| {
            let row = f.layout.row_of_rank(&labels, rank)?;
            Some((x_of(start as f64), f.g.y_of(row) + f.g.row_px / 2.0))
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
    let picked = sel.and_then(|(track, i)| {
        let s = f.t.tracks.get(track)?.spans.get(i)?;
        Some((f.layout.row_of_track(track)?, s))
    });
    if let Some((row, s)) = picked {
        let y = f.g.y_of(row);
        let (x0, x1) = (x_of(s.start_ns as f64), x_of(s.end_ns as f64));
        ctx.stroke_rect(
            x0 - 1.0,
            y + 1.0,
            (x1 - x0).max(1.0) + 2.0,
            f.g.row_px - 2.0,
        );
    }
    ctx.restore();
}

/// The time ruler: round ticks (at most ten) in units that adapt to the zoom, relative to the
/// run's start; the labels go to `data-ticks` for the tests.
fn ruler(
    canvas: &web_sys::HtmlCanvasElement,
    ctx: &CanvasRenderingContext2d,
    t: &Timeline,
    v: View,
    plot_w: f64,
    colour: &str,
) {
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    ctx.set_fill_style_str(colour);
    ctx.set_font("11px sans-serif");
    // Fewer ticks on a narrow canvas, so that labels do not collide.
    let most = ((plot_w / 90.0).floor() as usize).clamp(3, 10);
    let marks = ticks((v.start_ns, v.end_ns), t.start_ns as f64, most);
    for (ns, label) in &marks {
        let x = x_of(*ns);
        ctx.fill_rect(x, RULER_HEIGHT - 5.0, 1.0, 5.0);
        let _ = ctx.fill_text(label, x + 2.0, 11.0);
    }
    let labels: Vec<&str> = marks.iter().map(|(_, l)| l.as_str()).collect();
    let _ = canvas.set_attribute("data-ticks", &labels.join("|"));
}

/// Shades the selected time range over the ruler and every row, edged on both sides.
pub fn shade(canvas: &web_sys::HtmlCanvasElement, v: View, range: Option<(f64, f64)>) {
    let Some((a, b)) = range else { return };
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    let plot_w = w - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| (LABEL_WIDTH + (ns - v.start_ns) / span * plot_w).clamp(LABEL_WIDTH, w);
    let (x0, x1) = (x_of(a), x_of(b));
    ctx.set_fill_style_str("rgba(31, 119, 180, 0.18)");
    ctx.fill_rect(x0, 0.0, (x1 - x0).max(1.0), h);
    ctx.set_fill_style_str("rgba(31, 119, 180, 0.9)");
    ctx.fill_rect(x0, 0.0, 1.0, h);
    ctx.fill_rect(x1, 0.0, 1.0, h);
}
