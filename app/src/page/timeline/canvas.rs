//! The per-rank timeline, drawn on a canvas: one row per track, kernels coloured by operation.
//! Wheel (or W/S) zooms around the cursor, drag (or A/D) pans, shift+drag selects a range; the
//! minimap above shows the whole run and the tooltip the kernel under the mouse.

use leptos::html::Canvas;
use leptos::prelude::*;
use model::OpType;
use ncclscope_app::page_logic::timeline_math::{ticks, zoom, Motion, FIRST_STEP_S};
use timeline::{Lod, Mark, Timeline, LOD_NO_OP};
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

use crate::page::timeline::tooltip::{Hover, Tooltip};

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
/// Shift+drag (or a drag on the ruler) selects a time range, shaded, and calls `on_select`
/// with it when released; Escape clears it. The mouse's kernel goes to `hover` (the tooltip).
/// Focused, the canvas takes Perfetto's keys: W/S zoom, A/D pan (and the arrows), F zooms to
/// the selection.
#[component]
pub fn TimelineCanvas(
    timeline: Signal<Timeline>,
    view: RwSignal<Option<View>>,
    selected: Signal<Option<(usize, usize)>>,
    flow: Signal<Vec<(u32, i64)>>,
    on_pick: Callback<(usize, usize)>,
    selection: RwSignal<Option<(f64, f64)>>,
    on_select: Callback<(f64, f64)>,
    hover: Hover,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let down_at = RwSignal::new(None::<(f64, f64)>);
    let drag_from = RwSignal::new(None::<f64>);
    // Where a box selection started (ns), while the button is down.
    let select_from = StoredValue::new(None::<f64>);
    // The mouse's fraction of the plot's width, the keys' zoom centre (None: off the canvas).
    let mouse_at = StoredValue::new(None::<f64>);
    let keys = Keys {
        held: StoredValue::new(Vec::new()),
        last_frame: StoredValue::new(None),
        view,
        mouse_at,
    };
    // The tracks' box is as tall as every track; the canvas in it is at most a screen tall and
    // sticks below the panel bar, drawing the tracks the box has scrolled to (with many ranks a
    // whole-run canvas was 5 650 px tall: tens of MB to fill, upload and composite per frame).
    let rows_box = NodeRef::<leptos::html::Div>::new();
    let shown = RwSignal::new(Shown::default());
    let total_px = move || total_height(timeline.with(|t| t.tracks.len()));
    let measure = move || {
        let (Some(el), Some(rows_box)) = (canvas.get_untracked(), rows_box.get_untracked()) else {
            return;
        };
        let Some(w) = web_sys::window() else { return };
        let sticky_top = w
            .document()
            .and_then(|d| d.query_selector(".panel-nav").ok().flatten())
            .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
            .map_or(0.0, |n| f64::from(n.offset_height()));
        let inner = w
            .inner_height()
            .ok()
            .and_then(|h| h.as_f64())
            .unwrap_or(800.0);
        let now = shown_rows(
            total_px(),
            rows_box.get_bounding_client_rect().top(),
            inner,
            sticky_top,
            el.width() as f64 / f64::from(el.client_width().max(1)),
        );
        if now != shown.get_untracked() {
            shown.set(now);
        }
    };
    let on_scroll = window_event_listener(leptos::ev::scroll, move |_| measure());
    let on_resize = window_event_listener(leptos::ev::resize, move |_| measure());
    on_cleanup(move || {
        on_scroll.remove();
        on_resize.remove();
    });
    // A new timeline changes the box's height: measure once the next frame has laid it out
    // (never forcing a layout of the page).
    Effect::new(move |_| {
        timeline.with(|t| t.tracks.len());
        request_animation_frame(move || {
            set_timeout(
                move || {
                    if canvas.try_get_untracked().flatten().is_some() {
                        measure();
                    }
                },
                std::time::Duration::ZERO,
            );
        });
    });

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
            selection.set(None);
        }
        // The spans' indices changed: what the tooltip showed is another kernel's.
        hover.hide();
        (start_ns, end_ns)
    });

    Effect::new(move |_| {
        let v = view.get();
        let sel = selected.get();
        let range = selection.get();
        crate::page::theme::revision().track();
        let el = canvas.get();
        let at = shown.get();
        flow.with(|flow| {
            timeline.with(|t| {
                if let (Some(el), Some(v)) = (el, v) {
                    let at = at.fit(total_height(t.tracks.len()));
                    if el.height() != at.height_px as u32 {
                        el.set_height(at.height_px as u32);
                    }
                    draw(&el, t, v, at.offset_px);
                    mark(&el, t, v, sel, flow, at.offset_px);
                    shade(&el, v, range);
                }
            })
        });
    });

    let width = move || canvas.get().map(|c| c.width() as f64).unwrap_or(1000.0);
    // A mouse event's point in the canvas' own pixels (offsets are CSS pixels; the canvas is
    // scaled to the page's width).
    let point = move |e: &web_sys::MouseEvent| {
        let scale = canvas.get_untracked().map_or(1.0, |c| {
            c.width() as f64 / f64::from(c.client_width().max(1))
        });
        (e.offset_x() as f64 * scale, e.offset_y() as f64 * scale)
    };
    // The time at canvas x, in the current view.
    let time_at = move |x: f64| {
        let v = view.get_untracked()?;
        let w = width() - LABEL_WIDTH;
        Some(v.start_ns + (v.end_ns - v.start_ns) * ((x - LABEL_WIDTH) / w).clamp(0.0, 1.0))
    };
    // Ends a box selection: a range at least a few pixels wide is kept and aggregated; a click
    // clears it.
    let finish_selection = move |e: &web_sys::MouseEvent| {
        let Some(from) = select_from.get_value() else {
            return;
        };
        select_from.set_value(None);
        // The button's release is the range's end (the last moves may have been coalesced
        // away by the browser).
        if let Some(t) = time_at(point(e).0) {
            selection.set(Some((from.min(t), from.max(t))));
        }
        let Some(v) = view.get_untracked() else {
            return;
        };
        let min = 3.0 * (v.end_ns - v.start_ns) / (width() - LABEL_WIDTH);
        match selection.get_untracked() {
            Some((a, b)) if b - a >= min => on_select.run((a, b)),
            _ => selection.set(None),
        }
    };
    let on_wheel = move |e: web_sys::WheelEvent| {
        e.prevent_default();
        let Some(v) = view.get_untracked() else {
            return;
        };
        let (x, _) = point(&e);
        let w = width() - LABEL_WIDTH;
        let at = ((x - LABEL_WIDTH) / w).clamp(0.0, 1.0);
        let factor = if e.delta_y() > 0.0 { 1.25 } else { 0.8 };
        view.set(Some(View::from(zoom((v.start_ns, v.end_ns), at, factor))));
    };
    let on_down = move |e: web_sys::MouseEvent| {
        if e.button() != 0 {
            return;
        }
        // A drag pans or selects a range: it must not start a text selection in the page (on a
        // page of tables, Chromium extended it on every move, the slowest work of a pan). The
        // canvas still takes the focus a click gives, for the keys.
        e.prevent_default();
        if let Some(c) = canvas.get_untracked() {
            let options = web_sys::FocusOptions::new();
            options.set_prevent_scroll(true);
            let _ = c.focus_with_options(&options);
        }
        hover.hide();
        let (x, y) = point(&e);
        if (e.shift_key() || y < RULER_HEIGHT) && x >= LABEL_WIDTH {
            let Some(t) = time_at(x) else { return };
            select_from.set_value(Some(t));
            selection.set(Some((t, t)));
            return;
        }
        drag_from.set(Some(x));
        down_at.set(Some((x, y)));
    };
    let on_leave = move |e: web_sys::MouseEvent| {
        drag_from.set(None);
        down_at.set(None);
        mouse_at.set_value(None);
        finish_selection(&e);
        hover.hide();
    };
    let on_up = move |e: web_sys::MouseEvent| {
        if select_from.get_value().is_some() {
            finish_selection(&e);
            return;
        }
        drag_from.set(None);
        let Some((x0, y0)) = down_at.get_untracked() else {
            return;
        };
        down_at.set(None);
        let (x, y) = point(&e);
        // A click, not the end of a drag.
        if (x - x0).abs() > 3.0 || (y - y0).abs() > 3.0 {
            return;
        }
        let (Some(el), Some(v)) = (canvas.get_untracked(), view.get_untracked()) else {
            return;
        };
        let off = shown.get_untracked().offset_px;
        let hit = timeline.with_untracked(|t| hit_test(t, v, el.width() as f64, x, y, off));
        if let Some(p) = hit {
            on_pick.run(p);
        }
    };
    let on_move = move |e: web_sys::MouseEvent| {
        let (x, y) = point(&e);
        mouse_at.set_value(Some(
            ((x - LABEL_WIDTH) / (width() - LABEL_WIDTH)).clamp(0.0, 1.0),
        ));
        if let Some(from) = select_from.get_value() {
            if let Some(t) = time_at(x) {
                selection.set(Some((from.min(t), from.max(t))));
            }
            return;
        }
        let Some(v) = view.get_untracked() else {
            return;
        };
        let Some(from) = drag_from.get_untracked() else {
            // Not dragging: the kernel under the mouse goes to the tooltip.
            let w = width();
            let hit = timeline.with_untracked(|t| {
                let (row, i) = hit_test(t, v, w, x, y, shown.get_untracked().offset_px)?;
                let (track, span) = (&t.tracks[row], &t.tracks[row].spans[i]);
                let op = span.op.map_or("kernel", |op| op.name());
                let us = (span.end_ns - span.start_ns) as f64 / 1e3;
                Some(((row, i), format!("{op} · {} · {us:.1} µs", track.label)))
            });
            hover.moved(hit, f64::from(e.client_x()), f64::from(e.client_y()));
            return;
        };
        hover.hide();
        let dx = x - from;
        let ns = dx * (v.end_ns - v.start_ns) / (width() - LABEL_WIDTH);
        view.set(Some(View {
            start_ns: v.start_ns - ns,
            end_ns: v.end_ns - ns,
        }));
        drag_from.set(Some(x));
    };
    let on_key = move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        let key = e.key();
        if let Some(m) = Motion::of_key(&key) {
            e.prevent_default();
            if !e.repeat() {
                keys.press(m);
            }
            return;
        }
        match key.as_str() {
            "Escape" => {
                selection.set(None);
                hover.hide();
            }
            "f" | "F" => {
                if let Some((a, b)) = selection.get_untracked() {
                    view.set(Some(View {
                        start_ns: a,
                        end_ns: b,
                    }));
                }
            }
            _ => return,
        }
        e.prevent_default();
    };
    let on_key_up = move |e: web_sys::KeyboardEvent| {
        if let Some(m) = Motion::of_key(&e.key()) {
            keys.release(m);
        }
    };

    view! {
        <section class="timeline">
            <p class="hint" data-testid="timeline-summary">
                {move || timeline.with(|t| format!("{} tracks, {} kernels", t.tracks.len(), t.tracks.iter().map(|k| k.spans.len()).sum::<usize>()))}
            </p>
            <div class="timeline-rows" node_ref=rows_box
                style:aspect-ratio=move || format!("1200 / {}", total_px())>
            <canvas
                node_ref=canvas
                data-testid="timeline"
                tabindex="0"
                aria-label="Timeline of every rank's NCCL kernels. W and S zoom, A and D pan, shift and drag selects a time range, Escape clears it."
                data-window=move || view.get().map(|v| format!("{}_{}", v.start_ns as i64, v.end_ns as i64))
                data-selection=move || selection.get().map(|(a, b)| format!("{}_{}", a as i64, b as i64))
                width="1200"
                style:top=move || format!("{}px", shown.with(|s| s.sticky_top))
                data-first-row=move || shown.with(|s| (s.fit(total_px()).offset_px / ROW_HEIGHT).floor())
                on:wheel=on_wheel
                on:mousedown=on_down
                on:mouseup=on_up
                on:mouseleave=on_leave
                on:mousemove=on_move
                on:keydown=on_key
                on:keyup=on_key_up
                on:blur=move |_| keys.clear()
            ></canvas>
            </div>
            <p class="hint">
                "Wheel or W/S: zoom · drag or A/D: pan · shift+drag or drag on the ruler: select a range (F: zoom to it, Esc: clear) · click: details"
            </p>
            <Tooltip hover=hover />
        </section>
    }
}

/// A canvas of every track: its height in canvas pixels.
pub fn total_height(tracks: usize) -> f64 {
    RULER_HEIGHT + ROW_HEIGHT * tracks.max(1) as f64 + 4.0
}

/// What the canvas shows of the tracks' box: its height and how far down the tracks its first
/// row is (canvas pixels below the ruler), and where it sticks (CSS pixels from the top: the
/// panel bar's height).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shown {
    height_px: f64,
    offset_px: f64,
    sticky_top: f64,
}

impl Default for Shown {
    /// Until measured: the top of the tracks, a screen's worth.
    fn default() -> Shown {
        Shown {
            height_px: 900.0,
            offset_px: 0.0,
            sticky_top: 0.0,
        }
    }
}

impl Shown {
    /// Within a box `total` canvas pixels tall: never taller, never past its end.
    fn fit(self, total: f64) -> Shown {
        let height = self
            .height_px
            .min(total)
            .max((RULER_HEIGHT + ROW_HEIGHT).min(total))
            .round();
        Shown {
            height_px: height,
            offset_px: self.offset_px.clamp(0.0, (total - height).max(0.0)).round(),
            sticky_top: self.sticky_top,
        }
    }
}

/// The canvas for a box of `total` canvas pixels whose top is at `box_top` (CSS pixels from
/// the viewport's top) in a viewport `inner` pixels tall, the canvas sticking `sticky_top`
/// pixels down and drawing `scale` canvas pixels per CSS pixel.
fn shown_rows(total: f64, box_top: f64, inner: f64, sticky_top: f64, scale: f64) -> Shown {
    let scale = if scale.is_finite() && scale > 0.0 {
        scale
    } else {
        1.0
    };
    Shown {
        height_px: ((inner - sticky_top).max(120.0) * scale).ceil(),
        offset_px: ((sticky_top - box_top) * scale).max(0.0),
        sticky_top,
    }
    .fit(total)
}

impl From<(f64, f64)> for View {
    fn from((start_ns, end_ns): (f64, f64)) -> View {
        View { start_ns, end_ns }
    }
}

/// The navigation keys held down, and the animation that moves the view while any is.
#[derive(Clone, Copy)]
struct Keys {
    held: StoredValue<Vec<Motion>>,
    /// When the last animation frame ran (`Date.now()`); `None` when no frame is scheduled.
    last_frame: StoredValue<Option<f64>>,
    view: RwSignal<Option<View>>,
    mouse_at: StoredValue<Option<f64>>,
}

impl Keys {
    fn press(self, m: Motion) {
        if self.held.with_value(|h| h.contains(&m)) {
            return;
        }
        self.held.update_value(|h| h.push(m));
        // A tap moves at once (it may end before the next frame); holding keeps moving.
        self.step(m, FIRST_STEP_S);
        if self.last_frame.get_value().is_none() {
            self.last_frame.set_value(Some(js_sys::Date::now()));
            request_animation_frame(move || self.frame());
        }
    }

    fn release(self, m: Motion) {
        self.held.update_value(|h| h.retain(|x| *x != m));
    }

    /// The canvas lost focus: keyups will not reach it, so nothing stays held.
    fn clear(self) {
        self.held.update_value(Vec::clear);
    }

    fn step(self, m: Motion, dt: f64) {
        let at = self.mouse_at.get_value().unwrap_or(0.5);
        if let Some(v) = self.view.get_untracked() {
            self.view
                .set(Some(View::from(m.apply((v.start_ns, v.end_ns), at, dt))));
        }
    }

    fn frame(self) {
        // The component may be gone (a new page state): stop quietly.
        let Some(held) = self.held.try_get_value() else {
            return;
        };
        if held.is_empty() {
            self.last_frame.set_value(None);
            return;
        }
        let now = js_sys::Date::now();
        let last = self.last_frame.get_value().unwrap_or(now);
        // Seconds since the last frame, bounded so a stalled tab does not jump far.
        let dt = ((now - last) / 1000.0).clamp(0.0, 0.1);
        self.last_frame.set_value(Some(now));
        for m in held {
            self.step(m, dt);
        }
        request_animation_frame(move || self.frame());
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
/// The area shows `height` pixel rows of the tracks from `offset` down (plot coordinates: track
/// `r` starts at `r * ROW_HEIGHT`); paints take plot coordinates and are cut to the area.
struct Pixels {
    rgba: Vec<u8>,
    width: usize,
    height: usize,
    offset: f64,
    /// Bars painted, for the tests.
    bars: usize,
}

impl Pixels {
    /// The area, striped like the rows' backgrounds.
    fn new(
        width: usize,
        height: usize,
        offset: f64,
        background: [u8; 3],
        stripe: [u8; 3],
    ) -> Pixels {
        let mut rgba = vec![255u8; width * height * 4];
        let first = offset.max(0.0) as usize;
        for (y, pixels) in rgba.chunks_mut((width * 4).max(4)).enumerate() {
            let row = (first + y) / ROW_HEIGHT as usize;
            let [r, g, b] = if row.is_multiple_of(2) {
                stripe
            } else {
                background
            };
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

/// Draws the tracks the canvas shows (those from `offset` canvas pixels below the ruler down)
/// at a cost bounded by pixels × tracks: the visible spans are found by binary search, and a
/// track with many of them in view draws its summary instead. Records on the canvas how the
/// last frame was drawn (`data-summary-tracks`, `data-rects`) for the tests.
fn draw(canvas: &web_sys::HtmlCanvasElement, t: &Timeline, v: View, offset: f64) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let w = canvas.width() as f64;
    let h = canvas.height() as f64;
    ctx.clear_rect(0.0, 0.0, w, h);
    let plot_w = w - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;

    let colours = crate::page::theme::canvas_colours();
    ctx.set_font("11px sans-serif");

    let rows_px = t.tracks.len() as f64 * ROW_HEIGHT;
    let plot_h = (rows_px - offset).min(h - RULER_HEIGHT).max(1.0);
    let mut pixels = Pixels::new(
        plot_w.max(1.0) as usize,
        plot_h as usize,
        offset,
        colours.background,
        colours.stripe,
    );
    let mut summarised = 0;
    let ns_per_px = span / plot_w;
    let first_row = (offset / ROW_HEIGHT).floor() as usize;
    let last_row = (((offset + plot_h) / ROW_HEIGHT).ceil() as usize).min(t.tracks.len());
    for (row, track) in t.tracks.iter().enumerate().take(last_row).skip(first_row) {
        let y = RULER_HEIGHT + row as f64 * ROW_HEIGHT - offset;
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
    // The ruler, over the label of a row cut at the top.
    ctx.clear_rect(0.0, 0.0, w, RULER_HEIGHT);
    ruler(canvas, &ctx, t, v, x_of, &colours.ruler);
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

/// The kernel under canvas point (x, y), the canvas showing the tracks from `offset` down: the
/// span containing the time there, else the nearest within three pixels.
fn hit_test(
    t: &Timeline,
    v: View,
    width: f64,
    x: f64,
    y: f64,
    offset: f64,
) -> Option<(usize, usize)> {
    if x < LABEL_WIDTH || y < RULER_HEIGHT {
        return None;
    }
    let row = ((y - RULER_HEIGHT + offset) / ROW_HEIGHT) as usize;
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
    offset: f64,
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
    let plot_w = canvas.width() as f64 - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    ctx.set_stroke_style_str(&crate::page::theme::canvas_colours().mark);
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
                RULER_HEIGHT + row as f64 * ROW_HEIGHT - offset + ROW_HEIGHT / 2.0,
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
        let y = RULER_HEIGHT + row as f64 * ROW_HEIGHT - offset;
        let (x0, x1) = (x_of(s.start_ns as f64), x_of(s.end_ns as f64));
        ctx.stroke_rect(
            x0 - 1.0,
            y + 1.0,
            (x1 - x0).max(1.0) + 2.0,
            ROW_HEIGHT - 2.0,
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
    x_of: impl Fn(f64) -> f64,
    colour: &str,
) {
    ctx.set_fill_style_str(colour);
    ctx.set_font("11px sans-serif");
    let marks = ticks((v.start_ns, v.end_ns), t.start_ns as f64, 10);
    for (ns, label) in &marks {
        let x = x_of(*ns);
        ctx.fill_rect(x, RULER_HEIGHT - 5.0, 1.0, 5.0);
        let _ = ctx.fill_text(label, x + 2.0, 11.0);
    }
    let labels: Vec<&str> = marks.iter().map(|(_, l)| l.as_str()).collect();
    let _ = canvas.set_attribute("data-ticks", &labels.join("|"));
}

/// Shades the selected time range over the ruler and every track, edged on both sides.
fn shade(canvas: &web_sys::HtmlCanvasElement, v: View, range: Option<(f64, f64)>) {
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
