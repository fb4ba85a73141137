//! The rank-to-rank heat map on a canvas: one filled square per pair that holds anything (a few
//! thousand at 1 024 ranks, never a DOM element each), node blocks outlined, a legend with its
//! units, and a line under it that names the pair under the mouse (or under the keyboard's
//! cursor: arrow keys move it, Enter picks the pair, Escape drops the pick). The cells come from
//! `page_logic::heat_grid`; the Patterns view and the Aggregate view both draw with this.

use leptos::html::Canvas;
use leptos::prelude::*;
use ncclscope_app::page_logic::heat_grid::{
    css, diverging_level, diverging_rgb, log_level, sequential_rgb, signed_bytes, Grid, GridCell,
};
use ncclscope_app::page_logic::patterns_state::Mode;
use ncclscope_app::protocol::format::human_bytes;
use std::sync::Arc;

use crate::page::timeline::canvas::context_2d;

/// The canvas's side in pixels.
const SIDE: u32 = 512;

/// A cell's value in `mode`: bytes (predicted pairs without the theory's bytes count 1), or the
/// signed difference.
fn value(g: &Grid, c: &GridCell, mode: Mode) -> i128 {
    match mode {
        Mode::Observed => c.observed as i128,
        Mode::Predicted if g.predicted_bytes => c.predicted as i128,
        Mode::Predicted => i128::from(c.implied),
        Mode::Difference => c.difference(),
    }
}

/// The largest magnitude drawn (the scale's end).
fn scale_max(g: &Grid, mode: Mode) -> u128 {
    g.cells
        .iter()
        .map(|c| value(g, c, mode).unsigned_abs())
        .max()
        .unwrap_or(0)
}

fn colour(v: i128, max: u128, mode: Mode) -> Option<[u8; 3]> {
    match mode {
        Mode::Difference => Some(diverging_rgb(diverging_level(v, max))),
        _ if v <= 0 => None,
        _ => Some(sequential_rgb(log_level(v as f64, max as f64))),
    }
}

fn draw(canvas: &web_sys::HtmlCanvasElement, g: &Grid, mode: Mode, cursor: Option<(u32, u32)>) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let side = f64::from(SIDE);
    ctx.clear_rect(0.0, 0.0, side, side);
    let n = g.n.max(1) as f64;
    let cell = side / n;
    // At least a pixel, so a lone pair stays visible at 1 024 ranks.
    let w = cell.max(1.0);
    let max = scale_max(g, mode);
    let mut last = String::new();
    for c in &g.cells {
        let Some(rgb) = colour(value(g, c, mode), max, mode) else {
            continue;
        };
        let fill = css(rgb);
        if fill != last {
            ctx.set_fill_style_str(&fill);
            last = fill;
        }
        ctx.fill_rect(f64::from(c.col) * cell, f64::from(c.row) * cell, w, w);
    }
    // Node blocks: their borders, where there is room to tell them apart.
    let blocks: Vec<usize> = g.blocks.iter().map(|b| b.0).skip(1).collect();
    if !blocks.is_empty() && side / (blocks.len() + 1) as f64 >= 6.0 {
        ctx.set_stroke_style_str("rgba(120, 120, 120, 0.45)");
        ctx.set_line_width(1.0);
        ctx.begin_path();
        for at in blocks {
            let x = (at as f64 * cell).round() + 0.5;
            ctx.move_to(x, 0.0);
            ctx.line_to(x, side);
            ctx.move_to(0.0, x);
            ctx.line_to(side, x);
        }
        ctx.stroke();
    }
    if let Some((r, c)) = cursor {
        ctx.set_stroke_style_str("#000");
        ctx.set_line_width(2.0);
        ctx.stroke_rect(
            f64::from(c) * cell - 1.0,
            f64::from(r) * cell - 1.0,
            w + 2.0,
            w + 2.0,
        );
    }
}

/// What the line under the map says of the pair at (row, col).
fn describe(g: &Grid, row: u32, col: u32) -> String {
    let (Some(src), Some(dst)) = (g.labels.get(row as usize), g.labels.get(col as usize)) else {
        return String::new();
    };
    let Some(c) = g.at(row, col) else {
        return format!("{src} → {dst}: nothing sent, nothing predicted");
    };
    let predicted = match (c.implied, g.predicted_bytes) {
        (false, _) => "predicted: none (the layout implies no traffic)".to_string(),
        (true, true) => format!("predicted {}", human_bytes(c.predicted)),
        (true, false) => "predicted: implied by the layout (no model bytes)".to_string(),
    };
    let diff = if g.predicted_bytes || !c.implied {
        format!(", difference {}", signed_bytes(c.difference()))
    } else {
        String::new()
    };
    let parts = if c.parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", c.parts.join(", "))
    };
    format!(
        "{src} → {dst}: observed {}{parts}, {predicted}{diff}",
        human_bytes(c.observed)
    )
}

/// The legend: the scale's colours and what its ends mean, with units.
fn legend(g: &Grid, mode: Mode) -> impl IntoView {
    let max = scale_max(g, mode);
    let stops: Vec<String> = (0..=8)
        .map(|i| {
            let t = f64::from(i) / 8.0;
            match mode {
                Mode::Difference => css(diverging_rgb(t * 2.0 - 1.0)),
                _ => css(sequential_rgb(t)),
            }
        })
        .collect();
    let style = format!(
        "background: linear-gradient(to right, {}); height: 10px; width: 240px",
        stops.join(", ")
    );
    let capped = max.min(u64::MAX as u128) as u64;
    let (left, mid, right) = match mode {
        Mode::Difference => (
            format!("−{} (less than predicted)", human_bytes(capped)),
            "0 (as predicted)".to_string(),
            format!("+{} (more than predicted)", human_bytes(capped)),
        ),
        Mode::Predicted if !g.predicted_bytes => (
            String::new(),
            "a pair the layout implies (no model bytes)".to_string(),
            String::new(),
        ),
        _ => (
            "1 B".to_string(),
            "bytes sent, log scale".to_string(),
            human_bytes(capped),
        ),
    };
    view! {
        <div class="heatmap-legend small" data-testid="heatmap-legend" data-mode=mode.name()>
            <div style=style></div>
            <div class="heatmap-legend-labels">
                <span>{left}</span>" · "<span>{mid}</span>" · "<span>{right}</span>
            </div>
        </div>
    }
}

/// The heat map of `grid` in `mode`. `picked` is the picked pair (source, destination ids);
/// `on_pick` receives a new pick (or `None`).
#[component]
pub fn HeatMap(
    grid: Signal<Arc<Grid>>,
    mode: Signal<Mode>,
    picked: Signal<Option<(u32, u32)>>,
    on_pick: Callback<Option<(u32, u32)>>,
    test_id: &'static str,
    caption: Signal<String>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    // The keyboard's cursor (row, col), and the position under the mouse.
    let cursor = RwSignal::new(None::<(u32, u32)>);
    let hover = RwSignal::new(None::<(u32, u32)>);
    // The pick is shown as the cursor (where it is in the grid drawn).
    Effect::new(move |_| {
        let p = picked.get();
        let at = grid.with(|g| p.and_then(|(s, d)| Some((g.position(s)?, g.position(d)?))));
        cursor.set(at);
    });
    Effect::new(move |_| {
        let Some(el) = canvas.get() else { return };
        let at = cursor.get();
        grid.with(|g| draw(&el, g, mode.get(), at));
    });
    let at_mouse = move |e: &web_sys::MouseEvent| -> Option<(u32, u32)> {
        let el = canvas.get_untracked()?;
        let n = grid.with_untracked(|g| g.n) as f64;
        let (w, h) = (
            f64::from(el.client_width().max(1)),
            f64::from(el.client_height().max(1)),
        );
        let col = (f64::from(e.offset_x()) / w * n).floor();
        let row = (f64::from(e.offset_y()) / h * n).floor();
        (col >= 0.0 && row >= 0.0 && col < n && row < n).then_some((row as u32, col as u32))
    };
    let pick_at = move |at: Option<(u32, u32)>| {
        let ids = at.and_then(|(r, c)| {
            grid.with_untracked(|g| Some((*g.ids.get(r as usize)?, *g.ids.get(c as usize)?)))
        });
        on_pick.run(ids);
    };
    let on_key = move |e: web_sys::KeyboardEvent| {
        let n = grid.with_untracked(|g| g.n) as u32;
        if n == 0 {
            return;
        }
        let (r, c) = cursor.get_untracked().unwrap_or((0, 0));
        let moved = match e.key().as_str() {
            "ArrowUp" => Some((r.saturating_sub(1), c)),
            "ArrowDown" => Some(((r + 1).min(n - 1), c)),
            "ArrowLeft" => Some((r, c.saturating_sub(1))),
            "ArrowRight" => Some((r, (c + 1).min(n - 1))),
            "Enter" | " " => {
                e.prevent_default();
                pick_at(Some((r, c)));
                return;
            }
            "Escape" => {
                cursor.set(None);
                on_pick.run(None);
                return;
            }
            _ => None,
        };
        if let Some(at) = moved {
            e.prevent_default();
            cursor.set(Some(at));
            hover.set(Some(at));
        }
    };
    // The pair the line describes, with its figures as attributes (for tests and scripts).
    let shown = Memo::new(move |_| {
        let at = hover.get().or(cursor.get())?;
        grid.with(|g| {
            let c = g.at(at.0, at.1);
            Some((
                describe(g, at.0, at.1),
                g.ids.get(at.0 as usize).copied(),
                g.ids.get(at.1 as usize).copied(),
                c.map_or(0, |c| c.observed),
                c.map_or(0, |c| c.predicted),
                c.map_or(0, GridCell::difference),
            ))
        })
    });
    view! {
        <figure class="heatmap">
            <canvas node_ref=canvas data-testid=test_id tabindex="0"
                width=SIDE.to_string() height=SIDE.to_string()
                style=format!("width: {SIDE}px")
                data-n=move || grid.with(|g| g.n)
                data-unit=move || grid.with(|g| g.unit)
                data-cells=move || {
                    let m = mode.get();
                    grid.with(|g| g.cells.iter().filter(|c| value(g, c, m) != 0).count())
                }
                data-mode=move || mode.get().name()
                role="img"
                aria-label=move || caption.get()
                on:mousemove=move |e| hover.set(at_mouse(&e))
                on:mouseleave=move |_| hover.set(None)
                on:click=move |e| {
                    let at = at_mouse(&e);
                    cursor.set(at);
                    pick_at(at);
                }
                on:keydown=on_key
            ></canvas>
            <figcaption>{move || caption.get()}</figcaption>
            {move || grid.with(|g| legend(g, mode.get()))}
            <p class="heatmap-hover mono small" data-testid=format!("{test_id}-hover")
                aria-live="polite"
                data-src=move || shown.with(|s| s.as_ref().and_then(|s| s.1).map(|v| v.to_string()))
                data-dst=move || shown.with(|s| s.as_ref().and_then(|s| s.2).map(|v| v.to_string()))
                data-observed=move || shown.with(|s| s.as_ref().map(|s| s.3.to_string()))
                data-predicted=move || shown.with(|s| s.as_ref().map(|s| s.4.to_string()))
                data-difference=move || shown.with(|s| s.as_ref().map(|s| s.5.to_string()))>
                {move || shown.with(|s| s.as_ref().map_or_else(
                    || "Hover a cell, or focus the map and use the arrow keys.".to_string(),
                    |s| s.0.clone()))}
            </p>
        </figure>
    }
}
