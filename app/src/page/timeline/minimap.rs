//! The minimap above the timeline: the whole run's kernel density (the share of tracks busy in
//! each pixel column, from each track's summary levels, so its cost is pixels × tracks however
//! many kernels there are), with the visible window drawn as a box. A click or a drag on it
//! centres the view there, keeping the zoom (within the run). It is as wide as the timeline's
//! canvas, its plot under the canvas's plot.

use leptos::html::Canvas;
use leptos::prelude::*;
use timeline::{Lod, Timeline};

use crate::page::timeline::canvas::{context_2d, View, LABEL_WIDTH};
use ncclscope_app::page_logic::timeline_math::keep_within;

const HEIGHT: f64 = 36.0;

/// Busy fraction (0..=1) of each of `columns` equal columns over [start, end), over all tracks.
fn density(t: &Timeline, columns: usize) -> Vec<f32> {
    let mut busy = vec![0.0f64; columns];
    let (start, end) = (t.start_ns as f64, t.end_ns as f64);
    if columns == 0 || end <= start || t.tracks.is_empty() {
        return vec![0.0; columns];
    }
    let col_ns = (end - start) / columns as f64;
    for track in &t.tracks {
        add_track(&mut busy, &track.lod, start, col_ns);
    }
    let full = col_ns * t.tracks.len() as f64;
    busy.iter()
        .map(|b| (b / full).clamp(0.0, 1.0) as f32)
        .collect()
}

/// Adds one track's covered time to the columns, from its coarsest level whose buckets are no
/// wider than a column (its finest when even those are wider: they are spread over columns).
fn add_track(busy: &mut [f64], lod: &Lod, start: f64, col_ns: f64) {
    if lod.levels.is_empty() {
        return;
    }
    let k = lod.level_for(col_ns).unwrap_or(0);
    let level = &lod.levels[k];
    let bucket = lod.bucket_ns as f64 * (1u64 << k.min(62)) as f64;
    let last = busy.len() - 1;
    for (b, pair) in level.chunks_exact(2).enumerate() {
        let cov = f64::from(pair[1]) / 255.0;
        if cov == 0.0 {
            continue;
        }
        let b0 = lod.origin_ns as f64 + b as f64 * bucket - start;
        let b1 = b0 + bucket;
        let c0 = ((b0 / col_ns).floor().max(0.0) as usize).min(last);
        let c1 = ((b1 / col_ns).ceil().max(0.0) as usize).clamp(c0 + 1, last + 1);
        for (c, slot) in busy.iter_mut().enumerate().take(c1).skip(c0) {
            let (x0, x1) = (c as f64 * col_ns, (c + 1) as f64 * col_ns);
            let overlap = (b1.min(x1) - b0.max(x0)).max(0.0);
            *slot += overlap * cov;
        }
    }
}

/// `width`: the timeline canvas's width (CSS and canvas pixels).
#[component]
pub fn Minimap(
    timeline: Signal<Timeline>,
    view: RwSignal<Option<View>>,
    width: Signal<f64>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let full = move || width.get().max(LABEL_WIDTH + 100.0).round();
    let plot_w = move || full() - LABEL_WIDTH;
    // The density is computed in a frame after the timeline's (pixels × tracks: with hundreds
    // of tracks, a good part of a frame), the run's outline until then.
    let columns = RwSignal::new(Vec::<f32>::new());
    Effect::new(move |_| {
        timeline.track();
        let columns_wide = plot_w() as usize;
        ncclscope_app::page_logic::deferred::defer(move || {
            if let Some(d) = timeline.try_with_untracked(|t| density(t, columns_wide)) {
                let _ = columns.try_set(d);
            }
        });
    });
    // The view box, in canvas pixels (left, width), for the drawing and the tests.
    let view_box = move || {
        let v = view.get()?;
        let (s, e) = timeline.with(|t| (t.start_ns as f64, t.end_ns as f64));
        let run = (e - s).max(1.0);
        let plot_w = plot_w();
        let x0 = ((v.start_ns - s) / run * plot_w).clamp(0.0, plot_w);
        let x1 = ((v.end_ns - s) / run * plot_w).clamp(0.0, plot_w);
        Some((LABEL_WIDTH + x0, (x1 - x0).max(1.0)))
    };

    Effect::new(move |_| {
        let vb = view_box();
        crate::page::theme::revision().track();
        let w = full();
        let Some(el) = canvas.get() else { return };
        if el.width() != w as u32 {
            el.set_width(w as u32);
        }
        columns.with(|cols| draw(&el, cols, vb));
    });

    // Centres the view on the time under canvas-relative CSS x, keeping its width.
    let go = move |e: &web_sys::MouseEvent| {
        let (Some(el), Some(v)) = (canvas.get_untracked(), view.get_untracked()) else {
            return;
        };
        let scale = el.width() as f64 / f64::from(el.client_width().max(1));
        let x = e.offset_x() as f64 * scale - LABEL_WIDTH;
        if x < 0.0 {
            return;
        }
        let (s, end) = timeline.with_untracked(|t| (t.start_ns as f64, t.end_ns as f64));
        let at = s + (x / (el.width() as f64 - LABEL_WIDTH)).clamp(0.0, 1.0) * (end - s);
        let half = (v.end_ns - v.start_ns) / 2.0;
        let centred = keep_within((at - half, at + half), (s, end));
        view.set(Some(View::from(centred)));
    };

    view! {
        <canvas
            node_ref=canvas
            class="minimap"
            data-testid="minimap"
            aria-label="Minimap of the whole run: click or drag to move the view"
            data-view-box=move || view_box().map(|(x, w)| format!("{x:.1} {w:.1}"))
            width="1200"
            height=HEIGHT.to_string()
            on:mousedown=move |e| {
                // A drag moves the view; it must not select the page's text.
                e.prevent_default();
                go(&e);
            }
            on:mousemove=move |e| {
                if e.buttons() & 1 == 1 {
                    go(&e);
                }
            }
        ></canvas>
    }
}

fn draw(canvas: &web_sys::HtmlCanvasElement, cols: &[f32], view_box: Option<(f64, f64)>) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let width = canvas.width() as f64;
    ctx.clear_rect(0.0, 0.0, width, HEIGHT);
    let colours = crate::page::theme::canvas_colours();
    ctx.set_fill_style_str(&colours.text);
    ctx.set_font("11px sans-serif");
    let _ = ctx.fill_text("whole run", 4.0, HEIGHT / 2.0 + 4.0);
    let [r, g, b] = colours.stripe;
    ctx.set_fill_style_str(&format!("rgb({r}, {g}, {b})"));
    ctx.fill_rect(LABEL_WIDTH, 0.0, width - LABEL_WIDTH, HEIGHT);
    ctx.set_fill_style_str("#4e79a7");
    let inner = HEIGHT - 4.0;
    for (c, d) in cols.iter().enumerate() {
        if *d > 0.0 {
            // At least a pixel tall: a lone kernel in a long run stays visible.
            let h = (f64::from(*d) * inner).max(1.0);
            ctx.fill_rect(LABEL_WIDTH + c as f64, HEIGHT - 2.0 - h, 1.0, h);
        }
    }
    if let Some((x, w)) = view_box {
        // Outside the view is dimmed (towards the theme's background); the view is outlined.
        let [r, g, b] = colours.background;
        ctx.set_fill_style_str(&format!("rgba({r}, {g}, {b}, 0.55)"));
        ctx.fill_rect(LABEL_WIDTH, 0.0, x - LABEL_WIDTH, HEIGHT);
        ctx.fill_rect(x + w, 0.0, width - x - w, HEIGHT);
        ctx.set_stroke_style_str("#d62728");
        ctx.set_line_width(2.0);
        ctx.stroke_rect(x, 1.0, w, HEIGHT - 2.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use timeline::{Span, Track};

    #[test]
    fn density_follows_the_kernels() {
        // One track busy over the first half of the run, another idle: half the tracks busy in
        // the first half's columns, none in the second.
        let spans: Vec<Span> = (0..50)
            .map(|i| Span::new(i * 100, i * 100 + 100, None))
            .collect();
        let busy = Track {
            label: "rank 0".into(),
            lod: Lod::build(&spans),
            spans,
            source: None,
            par_lod: Lod::default(),
        };
        let idle = Track {
            label: "rank 1".into(),
            spans: Vec::new(),
            lod: Lod::default(),
            source: None,
            par_lod: Lod::default(),
        };
        let t = Timeline {
            tracks: vec![busy, idle],
            start_ns: 0,
            end_ns: 10_000,
            ..Timeline::default()
        };
        let d = density(&t, 10);
        for c in &d[..4] {
            assert!((c - 0.5).abs() < 0.01, "{d:?}");
        }
        // The summary's buckets (at most a column wide) may smear the edge into the next column,
        // but no busy time is lost or made up.
        assert!((d[4] + d[5] - 0.5).abs() < 0.01, "{d:?}");
        assert!(d[6..].iter().all(|c| *c == 0.0), "{d:?}");
        assert_eq!(density(&Timeline::default(), 4), vec![0.0; 4]);
    }
}
