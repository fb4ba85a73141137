//! The NVTX rows above the timeline (iterations, and the forward, backward and optimizer phases
//! the program marked), drawn on their own canvas with the timeline's time axis, so the tracks'
//! geometry (picking, selection) does not depend on them. Hovering shows a range's text in the
//! canvas's tooltip (an attribute: text, never markup).

use leptos::html::Canvas;
use leptos::prelude::*;
use timeline::{Marker, MarkerKind, Timeline};
use web_sys::CanvasRenderingContext2d;

use crate::page::timeline::canvas::{context_2d, View, LABEL_WIDTH, ROW_HEIGHT};

/// The canvas's width in its own pixels, as the timeline's.
const WIDTH: f64 = 1200.0;

fn fill(kind: u8, index: usize) -> &'static str {
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

#[component]
pub fn NvtxRows(timeline: Signal<Timeline>, view: Signal<Option<View>>) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let rows = move || timeline.with(|t| t.markers.len());
    Effect::new(move |_| {
        let v = view.get();
        let el = canvas.get();
        crate::page::theme::revision().track();
        timeline.with(|t| {
            if let (Some(el), Some(v)) = (el, v) {
                draw(&el, t, v);
            }
        });
    });
    let on_move = move |e: web_sys::MouseEvent| {
        let (Some(el), Some(v)) = (canvas.get_untracked(), view.get_untracked()) else {
            return;
        };
        let scale = el.width() as f64 / f64::from(el.client_width().max(1));
        let (x, y) = (e.offset_x() as f64 * scale, e.offset_y() as f64 * scale);
        let text = timeline.with_untracked(|t| {
            let row = t.markers.get((y / ROW_HEIGHT) as usize)?;
            let at = time_at(v, x)?;
            row.ranges
                .iter()
                .filter(|m| (m.start_ns as f64) <= at && at <= m.end_ns as f64)
                .min_by_key(|m| m.end_ns - m.start_ns)
                .map(|m| m.text.clone())
        });
        let _ = el.set_attribute("title", &text.unwrap_or_default());
    };
    view! {
        <Show when=move || rows() != 0>
            <canvas
                node_ref=canvas
                class="nvtx-rows"
                data-testid="nvtx-rows"
                data-rows=move || rows().to_string()
                width=WIDTH.to_string()
                height=move || (ROW_HEIGHT * rows() as f64).to_string()
                on:mousemove=on_move
            ></canvas>
        </Show>
    }
}

/// The time under canvas column `x`, if it is in the plot.
fn time_at(v: View, x: f64) -> Option<f64> {
    (x >= LABEL_WIDTH)
        .then(|| v.start_ns + (x - LABEL_WIDTH) / (WIDTH - LABEL_WIDTH) * (v.end_ns - v.start_ns))
}

fn draw(canvas: &web_sys::HtmlCanvasElement, t: &Timeline, v: View) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    ctx.clear_rect(0.0, 0.0, w, h);
    let plot_w = w - LABEL_WIDTH;
    let span = (v.end_ns - v.start_ns).max(1.0);
    let x_of = |ns: f64| LABEL_WIDTH + (ns - v.start_ns) / span * plot_w;
    ctx.set_font("11px sans-serif");
    let mut drawn = 0;
    for (row, markers) in t.markers.iter().enumerate() {
        let y = row as f64 * ROW_HEIGHT;
        // The row's label sits on the page's background: the theme's text colour.
        ctx.set_fill_style_str(&crate::page::theme::canvas_colours().text);
        let _ = ctx.fill_text(&markers.label, 4.0, y + 15.0);
        // At most one range per pixel column (ranges are sorted by start).
        let mut last_px = f64::NEG_INFINITY;
        for (i, m) in markers.ranges.iter().enumerate() {
            let (x0, x1) = (x_of(m.start_ns as f64), x_of(m.end_ns as f64));
            if x1 < LABEL_WIDTH || x0 > w || (x1 < last_px + 1.0 && x1 - x0 < 1.0) {
                continue;
            }
            last_px = last_px.max(x1);
            let x0 = x0.max(LABEL_WIDTH);
            let x1 = x1.min(w);
            ctx.set_fill_style_str(fill(m.kind, i));
            ctx.fill_rect(x0, y + 3.0, (x1 - x0).max(1.0), ROW_HEIGHT - 6.0);
            drawn += 1;
            label(&ctx, m, x0, x1, y);
        }
    }
    let _ = canvas.set_attribute("data-drawn", &drawn.to_string());
}

/// The range's text inside its bar, when it fits.
fn label(ctx: &CanvasRenderingContext2d, m: &Marker, x0: f64, x1: f64, y: f64) {
    if x1 - x0 < 30.0 {
        return;
    }
    let fits = ctx
        .measure_text(&m.text)
        .is_ok_and(|tm| tm.width() + 6.0 <= x1 - x0);
    if fits {
        ctx.set_fill_style_str("#222");
        let _ = ctx.fill_text(&m.text, x0 + 3.0, y + 15.0);
    }
}
