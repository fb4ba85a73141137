//! The per-rank timeline, drawn on a canvas ([`super::draw`]): a row per track, grouped by node
//! (a click on a node's header collapses it), a rank's NVTX rows folded under it (a click on its
//! label folds them), kernels coloured by operation. Wheel (or W/S) zooms around the cursor, drag
//! (or A/D) pans, within the run; shift+drag selects a range; the tooltip shows the kernel under
//! the mouse.
//!
//! The canvas is as wide as its box, one canvas pixel a CSS pixel. In a view (`fill`) its box
//! fills what the view leaves it and the rows stretch to fill it (up to [`ROW_MAX`]); more rows
//! than fit scroll in the box, the canvas sticking at its top and drawing the rows scrolled to.

use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use ncclscope_app::page_logic::timeline_math::{keep_within, zoom, Motion, FIRST_STEP_S};
use ncclscope_app::page_logic::track_rows::{layout, row_height, Layout, Row};
use std::collections::BTreeSet;
use timeline::Timeline;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub use crate::page::timeline::draw::{context_2d, View, COLOURS, LABEL_WIDTH, PAR_COLOURS};
use crate::page::timeline::draw::{
    draw, hit_track, mark, marker_at, shade, Frame, Geometry, ROW_MAX, ROW_MIN, RULER_HEIGHT,
};
use crate::page::timeline::tooltip::{Hover, Tooltip};

/// Which nodes are collapsed, whether the NVTX rows are folded, and the run the window was
/// last fitted to: owned by the page, so that they outlive a view change (a canvas mounted
/// again keeps the window a link or the user set while another view was shown).
#[derive(Clone, Copy)]
pub struct RowsState {
    pub collapsed: RwSignal<BTreeSet<String>>,
    pub markers_folded: RwSignal<bool>,
    pub fitted_run: StoredValue<Option<(i64, i64)>>,
}

impl RowsState {
    pub fn new() -> RowsState {
        RowsState {
            collapsed: RwSignal::new(BTreeSet::new()),
            markers_folded: RwSignal::new(false),
            fitted_run: StoredValue::new(None),
        }
    }
}

/// The box's size (CSS pixels) and how far it is scrolled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct BoxSize {
    width: f64,
    height: f64,
    scroll: f64,
}

/// `view` is the visible window: the page owns it so that a link can carry and restore it.
/// A click (not a drag) on a kernel calls `on_pick(track, span)`; `selected` is outlined, and
/// `flow` (rank, synchronised start) joins the members of the selected collective.
/// Shift+drag (or a drag on the ruler) selects a time range, shaded, and calls `on_select`
/// with it when released; Escape clears it. The mouse's kernel goes to `hover` (the tooltip).
/// Focused, the canvas takes Perfetto's keys: W/S zoom, A/D pan (and the arrows), F zooms to
/// the selection. `fill`: fill the box the view gives it (else as tall as its rows, at most
/// 60 % of the window); `rows`: the nodes collapsed and the NVTX rows folded; `width`: where it
/// reports its width (the minimap follows it).
///
/// (About 165 lines, most of them the view's markup and its attributes: the drawing and
/// hit-testing are in `draw`, the mouse in `Events`, the keys in `Keys`; what is left wires
/// their signals to one canvas and its box, and halves would pass a dozen signals between them.)
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
    #[prop(optional)] fill: bool,
    #[prop(optional)] rows: Option<RowsState>,
    #[prop(optional)] width: Option<RwSignal<f64>>,
) -> impl IntoView {
    let rows = rows.unwrap_or_else(RowsState::new);
    let canvas = NodeRef::<Canvas>::new();
    let area = NodeRef::<Div>::new();
    let size = RwSignal::new(BoxSize::default());
    let layout = Memo::new(move |_| {
        let (collapsed, folded) = (rows.collapsed.get(), rows.markers_folded.get());
        timeline.with(|t| {
            let tracks: Vec<&str> = t.tracks.iter().map(|k| k.label.as_str()).collect();
            let markers: Vec<&str> = t.markers.iter().map(|m| m.label.as_str()).collect();
            layout(&tracks, &markers, &collapsed, folded)
        })
    });
    // Row height, and the rows' height in all (canvas pixels, the ruler included).
    let geometry = Memo::new(move |_| {
        let s = size.get();
        let n = layout.with(|l| l.rows.len()).max(1);
        let row_px = if fill {
            row_height(n, s.height - RULER_HEIGHT - 4.0, ROW_MIN, ROW_MAX)
        } else {
            ROW_MIN
        };
        (row_px, RULER_HEIGHT + row_px * n as f64 + 4.0)
    });
    let total_px = move || geometry.get().1;
    // The canvas's height: the box's (filling), or the rows' up to the box's.
    let canvas_px = move || {
        let s = size.get();
        let total = total_px();
        if fill {
            s.height.max(RULER_HEIGHT + ROW_MIN)
        } else {
            total.min(s.height.max(RULER_HEIGHT + ROW_MIN))
        }
        .round()
    };
    let geom = move || Geometry {
        row_px: geometry.get().0,
        offset_px: size
            .get()
            .scroll
            .clamp(0.0, (total_px() - canvas_px()).max(0.0))
            .round(),
    };
    observe_size(area, size, width);
    let keys = Keys {
        held: StoredValue::new(Vec::new()),
        last_frame: StoredValue::new(None),
        view,
        mouse_at: StoredValue::new(None),
        run: Signal::derive(move || timeline.with(|t| (t.start_ns as f64, t.end_ns as f64))),
    };
    new_timeline_resets_view(timeline, view, selection, hover, rows.fitted_run);

    Effect::new(move |_| {
        let v = view.get();
        let sel = selected.get();
        let range = selection.get();
        crate::page::theme::revision().track();
        let (el, g, height, w) = (canvas.get(), geom(), canvas_px(), size.get().width);
        let folded = rows.markers_folded.get();
        let (Some(el), Some(v)) = (el, v) else {
            return;
        };
        if w >= 1.0 && el.width() != w as u32 {
            el.set_width(w as u32);
        }
        if el.height() != height as u32 {
            el.set_height(height as u32);
        }
        let colours = crate::page::theme::canvas_colours();
        flow.with(|flow| {
            timeline.with(|t| {
                layout.with(|l| {
                    let frame = Frame {
                        t,
                        layout: l,
                        view: v,
                        g,
                        colours: &colours,
                        markers_folded: folded,
                    };
                    draw(&el, &frame);
                    mark(&el, &frame, sel, flow);
                    shade(&el, v, range);
                })
            })
        });
    });

    let events = Events {
        canvas,
        view,
        selection,
        on_select,
        on_pick,
        hover,
        keys,
        rows,
        timeline,
        layout,
        geom: Signal::derive(geom),
        down_at: StoredValue::new(None),
        drag_from: StoredValue::new(None),
        select_from: StoredValue::new(None),
    };

    view! {
        <section class="timeline" class:fill=fill>
            <p class="hint timeline-summary" data-testid="timeline-summary">
                {move || timeline.with(|t| format!("{} tracks, {} kernels", t.tracks.len(), t.tracks.iter().map(|k| k.spans.len()).sum::<usize>()))}
            </p>
            <div class="timeline-scroll" node_ref=area
                on:scroll=move |_| {
                    if let Some(el) = area.get_untracked() {
                        let top = f64::from(el.scroll_top());
                        size.update(|s| s.scroll = top);
                    }
                }>
            <div class="timeline-rows" style:height=move || format!("{}px", total_px().max(if fill { size.get().height } else { 0.0 }))>
            <canvas
                node_ref=canvas
                data-testid="timeline"
                tabindex="0"
                aria-label="Timeline of every rank's NCCL kernels, grouped by node. W and S zoom, A and D pan, shift and drag selects a time range, Escape clears it. Click a node's header to collapse it."
                data-window=move || view.get().map(|v| format!("{}_{}", v.start_ns as i64, v.end_ns as i64))
                data-selection=move || selection.get().map(|(a, b)| format!("{}_{}", a as i64, b as i64))
                data-row-px=move || geometry.get().0.to_string()
                data-offset-px=move || geom().offset_px.to_string()
                data-first-row=move || (geom().offset_px / geometry.get().0).floor().to_string()
                data-track-rows=move || layout.with(track_rows_attr)
                width="1200"
                on:wheel=move |e| events.wheel(e)
                on:mousedown=move |e| events.down(e)
                on:mouseup=move |e| events.up(e)
                on:mouseleave=move |e| events.leave(e)
                on:mousemove=move |e| events.moved(e)
                on:keydown=move |e| events.key_down(e)
                on:keyup=move |e| {
                    if let Some(m) = Motion::of_key(&e.key()) {
                        keys.release(m);
                    }
                }
                on:blur=move |_| keys.clear()
            ></canvas>
            </div>
            </div>
            <p class="hint timeline-keys">
                "Wheel or W/S: zoom · drag or A/D: pan · shift+drag or drag on the ruler: select a range (F: zoom to it, Esc: clear) · click: details · click a node: collapse"
            </p>
            <Tooltip hover=hover />
        </section>
    }
}

/// Each track's row (`-` when its node is collapsed), for the tests.
fn track_rows_attr(l: &Layout) -> String {
    l.track_row
        .iter()
        .map(|r| r.map_or("-".to_string(), |r| r.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Follows the box's size (a `ResizeObserver`: a view change, the drawer, the window) into
/// `size`, and its width into `width` when asked.
fn observe_size(area: NodeRef<Div>, size: RwSignal<BoxSize>, width: Option<RwSignal<f64>>) {
    // An observation queued before the cleanup disconnected it may arrive after the view is
    // gone: every read and write here tolerates disposed values.
    let measure = move || {
        let Some(el) = area.try_get_untracked().flatten() else {
            return;
        };
        let now = BoxSize {
            width: f64::from(el.client_width()),
            height: f64::from(el.client_height()),
            scroll: f64::from(el.scroll_top()),
        };
        if size.try_get_untracked().is_some_and(|s| s != now) {
            size.set(now);
        }
        if let Some(w) = width {
            if w.try_get_untracked().is_some_and(|w| w != now.width) {
                w.set(now.width);
            }
        }
    };
    Effect::new(move |_| {
        let Some(el) = area.get() else { return };
        let on_resize = Closure::<dyn Fn()>::new(measure);
        if let Ok(observer) = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()) {
            observer.observe(&el);
            let observer = StoredValue::new_local(observer);
            on_cleanup(move || observer.with_value(|o| o.disconnect()));
        }
        // Lives as long as the observer, which the cleanup disconnects.
        on_resize.forget();
        measure();
    });
}

/// A new timeline shows the whole run, unless the user had zoomed into a part of the last one
/// that this one still covers (a filter or clock change keeps the place; so does a link's
/// window set with it).
fn new_timeline_resets_view(
    timeline: Signal<Timeline>,
    view: RwSignal<Option<View>>,
    selection: RwSignal<Option<(f64, f64)>>,
    hover: Hover,
    fitted_run: StoredValue<Option<(i64, i64)>>,
) {
    // (`with`, never `get`: a clone of millions of spans per frame would cost more than drawing.)
    Effect::new(move |_| {
        let (start_ns, end_ns) = timeline.with(|t| (t.start_ns, t.end_ns));
        // The run the window was fitted to, by this canvas or one of another view before it.
        let previous = fitted_run.get_value();
        fitted_run.set_value(Some((start_ns, end_ns)));
        // (The spans' indices may have changed: what the tooltip showed is another kernel's.)
        hover.hide();
        if previous == Some((start_ns, end_ns)) && view.with_untracked(Option::is_some) {
            // Mounted again on the same run (a view change): the window is the page's.
            return;
        }
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
    });
}

/// What the canvas's event handlers share.
#[derive(Clone, Copy)]
struct Events {
    canvas: NodeRef<Canvas>,
    view: RwSignal<Option<View>>,
    selection: RwSignal<Option<(f64, f64)>>,
    on_select: Callback<(f64, f64)>,
    on_pick: Callback<(usize, usize)>,
    hover: Hover,
    keys: Keys,
    rows: RowsState,
    timeline: Signal<Timeline>,
    layout: Memo<Layout>,
    geom: Signal<Geometry>,
    down_at: StoredValue<Option<(f64, f64)>>,
    /// Where a pan started (canvas x), while the button is down.
    drag_from: StoredValue<Option<f64>>,
    /// Where a box selection started (ns), while the button is down.
    select_from: StoredValue<Option<f64>>,
}

impl Events {
    fn plot_w(self) -> f64 {
        self.canvas
            .get_untracked()
            .map_or(1000.0, |c| c.width() as f64 - LABEL_WIDTH)
            .max(1.0)
    }

    /// A mouse event's point in the canvas's own pixels.
    fn point(self, e: &web_sys::MouseEvent) -> (f64, f64) {
        let scale = self.canvas.get_untracked().map_or(1.0, |c| {
            c.width() as f64 / f64::from(c.client_width().max(1))
        });
        (e.offset_x() as f64 * scale, e.offset_y() as f64 * scale)
    }

    /// The time at canvas x, in the current view.
    fn time_at(self, x: f64) -> Option<f64> {
        let v = self.view.get_untracked()?;
        let f = ((x - LABEL_WIDTH) / self.plot_w()).clamp(0.0, 1.0);
        Some(v.start_ns + (v.end_ns - v.start_ns) * f)
    }

    fn run(self) -> (f64, f64) {
        self.timeline
            .with_untracked(|t| (t.start_ns as f64, t.end_ns as f64))
    }

    /// The row under canvas height `y`.
    fn row_at(self, y: f64) -> Option<Row> {
        let r = self.geom.get_untracked().row_at(y)?;
        self.layout.with_untracked(|l| l.rows.get(r).cloned())
    }

    /// Ends a box selection: a range at least a few pixels wide is kept and aggregated; a click
    /// clears it.
    fn finish_selection(self, e: &web_sys::MouseEvent) {
        let Some(from) = self.select_from.get_value() else {
            return;
        };
        self.select_from.set_value(None);
        // The button's release is the range's end (the last moves may have been coalesced
        // away by the browser).
        if let Some(t) = self.time_at(self.point(e).0) {
            self.selection.set(Some((from.min(t), from.max(t))));
        }
        let Some(v) = self.view.get_untracked() else {
            return;
        };
        let min = 3.0 * (v.end_ns - v.start_ns) / self.plot_w();
        match self.selection.get_untracked() {
            Some((a, b)) if b - a >= min => self.on_select.run((a, b)),
            _ => self.selection.set(None),
        }
    }

    fn wheel(self, e: web_sys::WheelEvent) {
        e.prevent_default();
        let Some(v) = self.view.get_untracked() else {
            return;
        };
        let (x, _) = self.point(&e);
        let at = ((x - LABEL_WIDTH) / self.plot_w()).clamp(0.0, 1.0);
        let factor = if e.delta_y() > 0.0 { 1.25 } else { 0.8 };
        self.view
            .set(Some(View::from(zoom((v.start_ns, v.end_ns), at, factor))));
    }

    fn down(self, e: web_sys::MouseEvent) {
        if e.button() != 0 {
            return;
        }
        // A drag pans or selects a range: it must not start a text selection in the page. The
        // canvas still takes the focus a click gives, for the keys.
        e.prevent_default();
        if let Some(c) = self.canvas.get_untracked() {
            let options = web_sys::FocusOptions::new();
            options.set_prevent_scroll(true);
            let _ = c.focus_with_options(&options);
        }
        self.hover.hide();
        let (x, y) = self.point(&e);
        if (e.shift_key() || y < RULER_HEIGHT) && x >= LABEL_WIDTH {
            let Some(t) = self.time_at(x) else { return };
            self.select_from.set_value(Some(t));
            self.selection.set(Some((t, t)));
            return;
        }
        self.drag_from.set_value(Some(x));
        self.down_at.set_value(Some((x, y)));
    }

    fn leave(self, e: web_sys::MouseEvent) {
        self.drag_from.set_value(None);
        self.down_at.set_value(None);
        self.keys.mouse_at.set_value(None);
        self.finish_selection(&e);
        self.hover.hide();
    }

    fn up(self, e: web_sys::MouseEvent) {
        if self.select_from.get_value().is_some() {
            self.finish_selection(&e);
            return;
        }
        self.drag_from.set_value(None);
        let Some((x0, y0)) = self.down_at.get_value() else {
            return;
        };
        self.down_at.set_value(None);
        let (x, y) = self.point(&e);
        // A click, not the end of a drag.
        if (x - x0).abs() > 3.0 || (y - y0).abs() > 3.0 {
            return;
        }
        self.click(x, y);
    }

    /// A click at canvas (x, y): a node's header collapses or opens it, the NVTX rows' owner's
    /// label folds them, a kernel is picked.
    fn click(self, x: f64, y: f64) {
        match self.row_at(y) {
            Some(Row::Group { host, .. }) => self.rows.collapsed.update(|c| {
                if !c.remove(&host) {
                    c.insert(host);
                }
            }),
            Some(Row::Track(t))
                if x < LABEL_WIDTH
                    && self.layout.with_untracked(|l| l.markers_under) == Some(t) =>
            {
                self.rows.markers_folded.update(|f| *f = !*f);
            }
            Some(Row::Track(_)) if x < LABEL_WIDTH => {}
            Some(Row::Track(t)) => {
                let Some(v) = self.view.get_untracked() else {
                    return;
                };
                let hit = self
                    .timeline
                    .with_untracked(|tl| hit_track(tl, t, v, self.plot_w(), x));
                if let Some(i) = hit {
                    self.on_pick.run((t, i));
                }
            }
            _ => {}
        }
    }

    fn moved(self, e: web_sys::MouseEvent) {
        let (x, y) = self.point(&e);
        let plot_w = self.plot_w();
        self.keys
            .mouse_at
            .set_value(Some(((x - LABEL_WIDTH) / plot_w).clamp(0.0, 1.0)));
        if let Some(from) = self.select_from.get_value() {
            if let Some(t) = self.time_at(x) {
                self.selection.set(Some((from.min(t), from.max(t))));
            }
            return;
        }
        let Some(v) = self.view.get_untracked() else {
            return;
        };
        let Some(from) = self.drag_from.get_value() else {
            self.hovered(&e, v, x, y);
            return;
        };
        self.hover.hide();
        let ns = (x - from) * (v.end_ns - v.start_ns) / plot_w;
        let moved = keep_within((v.start_ns - ns, v.end_ns - ns), self.run());
        self.view.set(Some(View::from(moved)));
        self.drag_from.set_value(Some(x));
    }

    /// Not dragging: the kernel under the mouse goes to the tooltip, an NVTX range's text to
    /// the canvas's title.
    fn hovered(self, e: &web_sys::MouseEvent, v: View, x: f64, y: f64) {
        let row = self.row_at(y);
        let plot_w = self.plot_w();
        let title = match &row {
            Some(Row::Marker(m)) if x >= LABEL_WIDTH => self
                .timeline
                .with_untracked(|t| marker_at(t, *m, v, plot_w, x)),
            Some(Row::Group {
                host, collapsed, ..
            }) => Some(format!(
                "{host}: click to {} its tracks",
                if *collapsed { "show" } else { "hide" }
            )),
            _ => None,
        };
        if let Some(c) = self.canvas.get_untracked() {
            let _ = c.set_attribute("title", title.as_deref().unwrap_or_default());
        }
        let hit = match row {
            Some(Row::Track(t)) => self.timeline.with_untracked(|tl| {
                let i = hit_track(tl, t, v, plot_w, x)?;
                let (track, span) = (&tl.tracks[t], &tl.tracks[t].spans[i]);
                let op = span.op.map_or("kernel", |op| op.name());
                let us = (span.end_ns - span.start_ns) as f64 / 1e3;
                Some(((t, i), format!("{op} · {} · {us:.1} µs", track.label)))
            }),
            _ => None,
        };
        self.hover
            .moved(hit, f64::from(e.client_x()), f64::from(e.client_y()));
    }

    fn key_down(self, e: web_sys::KeyboardEvent) {
        if e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        let key = e.key();
        if let Some(m) = Motion::of_key(&key) {
            e.prevent_default();
            if !e.repeat() {
                self.keys.press(m);
            }
            return;
        }
        match key.as_str() {
            "Escape" => {
                self.selection.set(None);
                self.hover.hide();
            }
            "f" | "F" => {
                if let Some((a, b)) = self.selection.get_untracked() {
                    self.view.set(Some(View {
                        start_ns: a,
                        end_ns: b,
                    }));
                }
            }
            _ => return,
        }
        e.prevent_default();
    }
}

/// The navigation keys held down, and the animation that moves the view while any is.
#[derive(Clone, Copy)]
struct Keys {
    held: StoredValue<Vec<Motion>>,
    /// When the last animation frame ran (`Date.now()`); `None` when no frame is scheduled.
    last_frame: StoredValue<Option<f64>>,
    view: RwSignal<Option<View>>,
    /// The mouse's fraction of the plot's width, the keys' zoom centre (None: off the canvas).
    mouse_at: StoredValue<Option<f64>>,
    /// The run's first and last kernel: pans stop there.
    run: Signal<(f64, f64)>,
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
            let moved = m.apply((v.start_ns, v.end_ns), at, dt);
            let moved = match m {
                Motion::Left | Motion::Right => keep_within(moved, self.run.get_untracked()),
                Motion::ZoomIn | Motion::ZoomOut => moved,
            };
            self.view.set(Some(View::from(moved)));
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
